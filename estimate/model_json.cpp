// The model file format (models/README.md): a graph of ops, or the transformer shorthand.
// Every error names the file, the op and the field.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.hpp"
#include "estimate/builder.hpp"
#include "estimate/cost.hpp"
#include "estimate/estimator.hpp"
#include "estimate/transformer.hpp"

namespace truepeak::estimate {
namespace {

using nlohmann::json;

// Where we are in the file, for messages: "resnet50.json: op 'layer1.0.conv1' (#5), field
// 'kernel'".
struct Place {
  std::string where;
  std::string op;
  std::size_t index = 0;

  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    std::string text = where;
    if (!op.empty()) text += fmt::format(": op '{}' (#{})", op, index);
    if (!field.empty()) text += fmt::format(", field '{}'", field);
    throw InputError(text + ": " + why);
  }
};

struct KindFn {
  OpKind kind;
  std::string fn;
};

std::optional<KindFn> op_alias(const std::string& text) {
  static const std::map<std::string, KindFn> aliases = {
      {"bmm", {OpKind::matmul, ""}},
      {"conv", {OpKind::conv2d, ""}},
      {"relu", {OpKind::elementwise, "relu"}},
      {"relu6", {OpKind::elementwise, "relu6"}},
      {"gelu", {OpKind::elementwise, "gelu"}},
      {"gelu_tanh", {OpKind::elementwise, "gelu_tanh"}},
      {"silu", {OpKind::elementwise, "silu"}},
      {"sigmoid", {OpKind::elementwise, "sigmoid"}},
      {"tanh", {OpKind::elementwise, "tanh"}},
      {"hardswish", {OpKind::elementwise, "hardswish"}},
      {"add", {OpKind::elementwise, "add"}},
      {"mul", {OpKind::elementwise, "mul"}},
      {"scale", {OpKind::elementwise, "scale"}},
      {"rope", {OpKind::elementwise, "rope"}},
      {"dropout", {OpKind::elementwise, "dropout"}},
      {"batchnorm", {OpKind::norm, "batchnorm"}},
      {"layernorm", {OpKind::norm, "layernorm"}},
      {"rmsnorm", {OpKind::norm, "rmsnorm"}},
      {"maxpool", {OpKind::pool, "max"}},
      {"avgpool", {OpKind::pool, "avg"}},
      {"global_avgpool", {OpKind::pool, "avg"}},
      {"flatten", {OpKind::reshape, ""}},
      {"view", {OpKind::reshape, ""}},
      {"permute", {OpKind::transpose, ""}},
      {"cat", {OpKind::concat, ""}},
  };
  if (auto k = parse_op_kind(text)) return KindFn{*k, ""};
  auto it = aliases.find(text);
  if (it == aliases.end()) return std::nullopt;
  return it->second;
}

const std::set<std::string> kOpFields = {
    "name",        "op",     "fn",       "in",     "out",    "shape",        "kernel",
    "stride",      "pad",    "dilation", "groups", "bias",   "out_channels", "out_features",
    "vocab",       "dim",    "weight",   "affine", "perm",   "axis",         "transpose_a",
    "transpose_b", "causal", "params",   "cache",  "comment"};

Dim parse_dim(const json& v, const Place& place, const std::string& field) {
  if (v.is_number_integer()) {
    if (v.get<std::int64_t>() <= 0) place.fail(field, "dimensions must be positive");
    return Dim(v.get<std::int64_t>());
  }
  if (v.is_string()) {
    try {
      return Dim::parse(v.get<std::string>());
    } catch (const InputError& e) {
      place.fail(field, e.what());
    }
  }
  place.fail(field, fmt::format("expected a positive integer or a symbol such as \"N\", got {}",
                                v.dump()));
}

Shape parse_shape(const json& v, const Place& place, const std::string& field) {
  if (!v.is_array() || v.empty()) place.fail(field, "expected a non-empty array of dimensions");
  Shape shape;
  for (const auto& d : v) shape.push_back(parse_dim(d, place, field));
  return shape;
}

std::int64_t get_int(const json& op, const Place& place, const std::string& field,
                     std::int64_t fallback) {
  if (!op.contains(field)) return fallback;
  const auto& v = op.at(field);
  if (!v.is_number_integer())
    place.fail(field, fmt::format("expected an integer, got {}", v.dump()));
  return v.get<std::int64_t>();
}

bool get_bool(const json& op, const Place& place, const std::string& field, bool fallback) {
  if (!op.contains(field)) return fallback;
  if (!op.at(field).is_boolean())
    place.fail(field, fmt::format("expected true or false, got {}", op.at(field).dump()));
  return op.at(field).get<bool>();
}

std::string get_string(const json& obj, const Place& place, const std::string& field, bool required,
                       const std::string& fallback = "") {
  if (!obj.contains(field)) {
    if (required) place.fail(field, "missing");
    return fallback;
  }
  if (!obj.at(field).is_string())
    place.fail(field, fmt::format("expected a string, got {}", obj.at(field).dump()));
  return obj.at(field).get<std::string>();
}

std::vector<TensorRef> parse_tensor_list(const json& op, const Place& place,
                                         const std::string& field) {
  std::vector<TensorRef> list;
  if (!op.contains(field)) return list;
  if (!op.at(field).is_array())
    place.fail(field, "expected an array of {\"name\", \"shape\"} objects");
  for (const auto& t : op.at(field)) {
    if (!t.is_object()) place.fail(field, "expected {\"name\": ..., \"shape\": [...]}");
    if (!t.contains("name") || !t.at("name").is_string())
      place.fail(field, "every entry needs a \"name\" string");
    if (!t.contains("shape"))
      place.fail(field, fmt::format("'{}' needs a \"shape\"", t.at("name").get<std::string>()));
    list.push_back({t.at("name").get<std::string>(), parse_shape(t.at("shape"), place, field)});
  }
  return list;
}

ConvAttrs parse_window(const json& op, const Place& place, std::int64_t default_kernel) {
  ConvAttrs a;
  if (op.contains("kernel")) {
    const auto& k = op.at("kernel");
    if (k.is_number_integer()) {
      a.kernel_h = a.kernel_w = k.get<std::int64_t>();
    } else if (k.is_array() && k.size() == 2 && k[0].is_number_integer() &&
               k[1].is_number_integer()) {
      a.kernel_h = k[0].get<std::int64_t>();
      a.kernel_w = k[1].get<std::int64_t>();
    } else {
      place.fail("kernel", fmt::format("expected an integer or [h, w], got {}", k.dump()));
    }
  } else {
    a.kernel_h = a.kernel_w = default_kernel;
  }
  a.stride = get_int(op, place, "stride", 1);
  a.pad = get_int(op, place, "pad", 0);
  a.dilation = get_int(op, place, "dilation", 1);
  a.groups = get_int(op, place, "groups", 1);
  return a;
}

Op build_op(const json& j, const KindFn& kf, const std::vector<TensorRef>& in, const Place& place,
            const std::optional<Shape>& shape, std::vector<std::string>& warnings) {
  auto need_inputs = [&](std::size_t n) {
    if (in.size() != n)
      place.fail("in", fmt::format("{} takes {} input(s), got {}", j.at("op").get<std::string>(), n,
                                   in.size()));
  };
  const std::string& name = place.op;
  const std::string weight = get_string(j, place, "weight", false);
  switch (kf.kind) {
    case OpKind::linear: {
      need_inputs(1);
      Dim out;
      if (j.contains("out_features"))
        out = parse_dim(j.at("out_features"), place, "out_features");
      else if (shape)
        out = shape->back();
      else
        place.fail("out_features", "missing (or give the output 'shape')");
      return make_linear(name, in[0], out, get_bool(j, place, "bias", true), weight);
    }
    case OpKind::matmul:
      need_inputs(2);
      return make_matmul(name, in[0], in[1], get_bool(j, place, "transpose_a", false),
                         get_bool(j, place, "transpose_b", false));
    case OpKind::conv2d: {
      need_inputs(1);
      Dim out;
      if (j.contains("out_channels"))
        out = parse_dim(j.at("out_channels"), place, "out_channels");
      else if (shape && shape->size() == 4)
        out = (*shape)[1];
      else
        place.fail("out_channels", "missing (or give the output 'shape')");
      return make_conv2d(name, in[0], out, parse_window(j, place, 1),
                         get_bool(j, place, "bias", false));
    }
    case OpKind::attention:
      need_inputs(3);
      return make_attention(name, in[0], in[1], in[2], get_bool(j, place, "causal", false),
                            parse_tensor_list(j, place, "cache"));
    case OpKind::elementwise: {
      const std::string fn = kf.fn.empty() ? get_string(j, place, "fn", true) : kf.fn;
      if (!is_known_elementwise(fn))
        warnings.push_back(fmt::format(
            "{}: op '{}' (#{}): elementwise function '{}' is not one the cost model knows ({}); "
            "costed at one FLOP per element",
            place.where, place.op, place.index, fn, known_elementwise_list()));
      return make_elementwise(name, fn, in, parse_tensor_list(j, place, "params"));
    }
    case OpKind::norm:
      need_inputs(1);
      return make_norm(name, kf.fn.empty() ? get_string(j, place, "fn", true) : kf.fn, in[0],
                       get_bool(j, place, "affine", true));
    case OpKind::softmax:
      need_inputs(1);
      return make_softmax(name, in[0]);
    case OpKind::pool: {
      need_inputs(1);
      const bool global = j.at("op") == "global_avgpool";
      ConvAttrs a = parse_window(j, place, global ? 0 : 1);
      if (a.stride == 1 && !j.contains("stride") && !global)
        a.stride = a.kernel_h;  // as torch: stride = kernel
      return make_pool(name, kf.fn.empty() ? get_string(j, place, "fn", true) : kf.fn, in[0], a);
    }
    case OpKind::embedding: {
      need_inputs(1);
      if (!j.contains("vocab")) place.fail("vocab", "missing");
      Dim dim;
      if (j.contains("dim"))
        dim = parse_dim(j.at("dim"), place, "dim");
      else if (shape)
        dim = shape->back();
      else
        place.fail("dim", "missing (or give the output 'shape')");
      return make_embedding(name, in[0], parse_dim(j.at("vocab"), place, "vocab"), dim, weight);
    }
    case OpKind::reshape:
      need_inputs(1);
      if (!shape) place.fail("shape", "a reshape needs its output shape");
      return make_reshape(name, in[0], *shape);
    case OpKind::transpose: {
      need_inputs(1);
      if (!j.contains("perm") || !j.at("perm").is_array())
        place.fail("perm", "missing (an array of axes)");
      std::vector<int> perm;
      for (const auto& p : j.at("perm")) {
        if (!p.is_number_integer()) place.fail("perm", "expected integers");
        perm.push_back(p.get<int>());
      }
      return make_transpose(name, in[0], perm);
    }
    case OpKind::concat:
      return make_concat(name, in, static_cast<int>(get_int(j, place, "axis", -1)),
                         parse_tensor_list(j, place, "params"));
  }
  place.fail("op", "unhandled kind");
}

Graph parse_graph(const json& doc, const std::string& where, std::vector<std::string>& warnings) {
  GraphBuilder builder;
  Place top{where, "", 0};
  if (!doc.contains("inputs") || !doc.at("inputs").is_array() || doc.at("inputs").empty())
    top.fail("inputs",
             "missing: a graph needs its inputs, e.g. [{\"name\": \"image\", \"shape\": [\"N\", 3, "
             "224, 224]}]");
  for (const auto& t : parse_tensor_list(doc, top, "inputs")) {
    if (builder.find(t.name))
      top.fail("inputs", fmt::format("tensor '{}' is defined twice", t.name));
    builder.input(t.name, t.shape);
  }
  if (!doc.contains("ops") || !doc.at("ops").is_array() || doc.at("ops").empty())
    top.fail("ops", "missing: expected a non-empty array of ops");
  std::set<std::string> names;
  std::size_t index = 0;
  for (const auto& j : doc.at("ops")) {
    Place place{where, "", index};
    if (!j.is_object()) place.fail("", fmt::format("op #{} is not an object", index));
    place.op = get_string(j, place, "name", true);
    if (!names.insert(place.op).second) place.fail("name", "two ops have this name");
    for (const auto& [key, value] : j.items())
      if (!kOpFields.count(key)) place.fail(key, "unknown field");
    const std::string kind_text = get_string(j, place, "op", true);
    const auto kf = op_alias(kind_text);
    if (!kf) place.fail("op", fmt::format("unknown op '{}'", kind_text));
    if (!j.contains("in") || !j.at("in").is_array() || j.at("in").empty())
      place.fail("in", "missing: an array of input tensor names");
    std::vector<TensorRef> in;
    for (const auto& n : j.at("in")) {
      if (!n.is_string()) place.fail("in", "expected tensor names (strings)");
      const auto* t = builder.find(n.get<std::string>());
      if (!t)
        place.fail("in", fmt::format("tensor '{}' is not an input nor written by an earlier op",
                                     n.get<std::string>()));
      in.push_back(*t);
    }
    std::optional<Shape> shape;
    if (j.contains("shape")) shape = parse_shape(j.at("shape"), place, "shape");
    Op op;
    try {
      op = build_op(j, *kf, in, place, shape, warnings);
    } catch (const InputError& e) {
      const std::string what = e.what();
      if (what.rfind(where, 0) == 0) throw;
      place.fail("", what);
    }
    if (shape && !(*shape == op.output.shape))
      place.fail("shape", fmt::format("the op produces {}, the file says {}",
                                      shape_str(op.output.shape), shape_str(*shape)));
    op.output.name = get_string(j, place, "out", false, place.op);
    if (builder.find(op.output.name))
      place.fail("out", fmt::format("tensor '{}' is written twice", op.output.name));
    builder.add(std::move(op));
    ++index;
  }
  // Views alone move no data: such a model has no time to estimate.
  const auto& ops = builder.graph().ops;
  if (std::all_of(ops.begin(), ops.end(), [](const Op& op) { return op.kind == OpKind::reshape; }))
    top.fail("ops", "every op is a view (reshape, flatten): nothing computes or moves data");
  return builder.take();
}

}  // namespace

Model model_from_json_text(const std::string& text, const std::string& where) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    // A syntax error, or a number past the range of a double (out_of_range.406).
    throw InputError(fmt::format("{}: not valid JSON: {}", where, e.what()));
  }
  Place top{where, "", 0};
  if (!doc.is_object()) top.fail("", "expected a JSON object (a truepeak model)");
  if (get_string(doc, top, "format", true) != "truepeak-model")
    top.fail("format", "expected \"truepeak-model\"");
  const auto version = get_int(doc, top, "version", 1);
  if (version != 1)
    top.fail("version", fmt::format("version {} is not supported (this reader knows 1)", version));
  static const std::set<std::string> top_fields = {
      "format",  "version", "name", "kind",        "description", "reference",
      "symbols", "inputs",  "ops",  "transformer", "comment"};
  for (const auto& [key, value] : doc.items())
    if (!top_fields.count(key)) top.fail(key, "unknown field");

  Model model;
  model.name = get_string(doc, top, "name", true);
  model.description = get_string(doc, top, "description", false);
  model.source = where;
  if (doc.contains("reference")) {
    const auto& r = doc.at("reference");
    if (!r.is_object())
      top.fail("reference", "expected an object {\"params\": ..., \"macs\": ...}");
    if (r.contains("params") && r.at("params").is_number())
      model.reference_params = r.at("params").get<double>();
    if (r.contains("macs") && r.at("macs").is_number())
      model.reference_macs = r.at("macs").get<double>();
  }
  if (doc.contains("symbols")) {
    if (!doc.at("symbols").is_object())
      top.fail("symbols", "expected an object of default values, e.g. {\"S\": 128}");
    for (const auto& [key, value] : doc.at("symbols").items()) {
      if (!value.is_number_integer() || value.get<std::int64_t>() <= 0)
        top.fail("symbols", fmt::format("'{}' must be a positive integer", key));
      model.defaults.emplace_back(key, value.get<std::int64_t>());
    }
  }
  if (doc.contains("transformer")) {
    if (doc.contains("ops")) top.fail("ops", "give either 'ops' or 'transformer', not both");
    expand_transformer(doc.at("transformer"), where, model);
  } else {
    model.kind = get_string(doc, top, "kind", false, "graph");
    model.forward = parse_graph(doc, where, model.warnings);
  }
  if (doc.contains("kind")) model.kind = get_string(doc, top, "kind", false);
  // Every symbol used must have a value: N is given per estimate, the others need a default.
  Bindings check = model.defaults;
  check.emplace_back("N", 1);
  if (std::none_of(check.begin(), check.end(), [](const auto& b) { return b.first == "T"; }))
    check.emplace_back("T", 1);
  for (const Graph* g : {&model.forward, model.decode ? &*model.decode : nullptr}) {
    if (!g) continue;
    for (const auto& op : g->ops)
      for (const auto* list : {&op.inputs, &op.weights, &op.state})
        for (const auto& t : *list)
          for (const auto& d : t.shape)
            for (const auto& s : d.symbols)
              if (std::none_of(check.begin(), check.end(),
                               [&](const auto& b) { return b.first == s; }))
                throw InputError(
                    fmt::format("{}: op '{}', tensor '{}': symbol '{}' has no default value (add "
                                "it to \"symbols\")",
                                where, op.name, t.name, s));
  }
  return model;
}

}  // namespace truepeak::estimate
