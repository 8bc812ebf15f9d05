// Binding an ONNX graph's inputs: each dynamic dimension's value from --batch, --seq, --context
// or --input-shape, by its name and place, or one line saying which option gives it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/text.hpp"
#include "estimate/onnx_parse_detail.hpp"
#include "estimate/onnx_shape_eval.hpp"

namespace truepeak::estimate::onnx_detail::parse {
namespace {

// Which option a dynamic dimension takes, from its name and place.
enum class DimRole { batch, seq, context, unknown };

DimRole dim_role(const std::string& param, int index, bool integer_input) {
  const auto name = ascii_lower(param);
  for (const char* key : {"batch", "bsz"}) {
    if (name.find(key) != std::string::npos) return DimRole::batch;
  }
  // Before the sequence names: "past_sequence_length" is the cache's length.
  for (const char* key : {"past", "cache", "context", "kv"}) {
    if (name.find(key) != std::string::npos) return DimRole::context;
  }
  if (name == "n" || name == "b") return DimRole::batch;
  for (const char* key : {"seq", "sequence", "len", "token", "time"}) {
    if (name.find(key) != std::string::npos) return DimRole::seq;
  }
  if (name == "s" || name == "t" || name == "l") return DimRole::seq;
  if (index == 0) return DimRole::batch;
  if (index == 1 && integer_input) return DimRole::seq;
  return DimRole::unknown;
}

// The terms of "a + b + 1", trimmed.
std::vector<std::string> split_sum(const std::string& text) {
  std::vector<std::string> terms;
  std::size_t pos = 0;
  while (true) {
    const auto plus = text.find('+', pos);
    auto term = text.substr(pos, plus == std::string::npos ? std::string::npos : plus - pos);
    const auto first = term.find_first_not_of(" \t");
    const auto last = term.find_last_not_of(" \t");
    terms.push_back(first == std::string::npos ? std::string() : term.substr(first, last - first + 1));
    if (plus == std::string::npos) return terms;
    pos = plus + 1;
  }
}

std::string dims_str(const std::vector<std::int64_t>& dims) {
  return fmt::format("{}", fmt::join(dims, "x"));
}

const InputShape* given_shape(const OnnxOptions& options, const std::string& name) {
  const auto it = std::find_if(options.input_shapes.begin(), options.input_shapes.end(),
                               [&](const InputShape& s) { return s.name == name; });
  return it == options.input_shapes.end() ? nullptr : &*it;
}

// Whether --input-shape's `given` for `tensor` fixes the batch: the given shape has the input's
// rank (2 or more) and fills its first dimension where that is a dynamic batch (named or placed
// as one), or changes it where the file fixes it. A given shape that keeps a fixed first
// dimension (a [1, 16, 64] table broadcast over the batch) says nothing of the batch.
bool gives_batch(const onnx::TypeProto_Tensor& tensor, const InputShape& given) {
  if (!tensor.has_shape() || tensor.shape().dim_size() < 2 ||
      tensor.shape().dim_size() != static_cast<int>(given.dims.size()))
    return false;
  const auto& first = tensor.shape().dim(0);
  if (first.has_dim_value() && first.dim_value() > 0) return first.dim_value() != given.dims[0];
  return dim_role(first.has_dim_param() ? first.dim_param() : "", 0, is_integer_type(tensor.elem_type())) ==
         DimRole::batch;
}

// The batch the inputs take: one that --input-shape gives (for an input whose first dimension is
// its batch), else --batch.
std::optional<std::int64_t> resolve_batch(const onnx::GraphProto& graph, const std::set<std::string>& initializers,
                                          const OnnxOptions& options, const std::string& where) {
  std::optional<std::int64_t> from_shape;
  for (const auto& input : graph.input()) {
    if (initializers.count(input.name()) || !input.type().has_tensor_type()) continue;
    const auto* given = given_shape(options, input.name());
    if (!given || !gives_batch(input.type().tensor_type(), *given)) continue;
    if (from_shape && *from_shape != given->dims[0]) {
      throw InputError(fmt::format("{}: the --input-shape values give the batch dimension {} and {}", where,
                                   *from_shape, given->dims[0]));
    }
    from_shape = given->dims[0];
    if (options.batch && !options.batch_is_default && *options.batch != *from_shape) {
      throw InputError(fmt::format(
          "{}: --input-shape {}={} fixes the batch at {}, but batch {} is asked for (--batch, "
          "--sweep-batch); give the batch in one place",
          where, given->name, dims_str(given->dims), *from_shape, *options.batch));
    }
  }
  return from_shape ? from_shape : options.batch;
}

}  // namespace

std::optional<std::int64_t> bind_inputs(onnx::GraphProto& graph, const std::set<std::string>& initializers,
                                        const OnnxOptions& options, const std::string& where) {
  const auto batch = resolve_batch(graph, initializers, options, where);
  bool has_batch = false;
  std::set<std::string> input_names;
  for (auto& input : *graph.mutable_input()) {
    if (initializers.count(input.name())) continue;
    input_names.insert(input.name());
    auto* type = input.mutable_type();
    if (!type->has_tensor_type()) {
      throw InputError(fmt::format("{}: input '{}' is not a tensor (sequences and maps are not supported)",
                                   where, input.name()));
    }
    auto* tensor = type->mutable_tensor_type();
    if (const auto* given = given_shape(options, input.name())) {
      if (tensor->has_shape() && tensor->shape().dim_size() != static_cast<int>(given->dims.size())) {
        throw InputError(fmt::format("{}: --input-shape {}={} has rank {}, the input has rank {}", where,
                                     given->name, dims_str(given->dims), given->dims.size(),
                                     tensor->shape().dim_size()));
      }
      if (gives_batch(*tensor, *given)) has_batch = true;
      auto* shape = tensor->mutable_shape();
      shape->clear_dim();
      for (auto d : given->dims) shape->add_dim()->set_dim_value(d);
      continue;
    }
    if (!tensor->has_shape()) {
      throw InputError(fmt::format("{}: input '{}' has no shape in the file; give it with --input-shape {}=DIMS",
                                   where, input.name(), input.name()));
    }
    const bool integer_input = is_integer_type(tensor->elem_type());
    auto* shape = tensor->mutable_shape();
    for (int i = 0; i < shape->dim_size(); ++i) {
      auto* dim = shape->mutable_dim(i);
      if (dim->has_dim_value() && dim->dim_value() > 0) {
        if (i == 0 && shape->dim_size() >= 2 && batch) {
          if (dim->dim_value() != *batch) {
            throw InputError(fmt::format(
                "{}: input '{}' has a fixed batch of {} in the file, not {}; give --batch {} (its only "
                "batch), its whole shape with --input-shape, or export the model with a dynamic batch axis",
                where, input.name(), dim->dim_value(), *batch, dim->dim_value()));
          }
          has_batch = true;
        }
        continue;
      }
      const std::string param = dim->has_dim_param() ? dim->dim_param() : std::string();
      const auto value_of = [&](DimRole role) -> std::optional<std::int64_t> {
        if (role == DimRole::batch) return batch;
        if (role == DimRole::seq) return options.seq;
        if (role == DimRole::context) return options.context ? options.context : options.seq;
        return std::nullopt;
      };
      // A sum of names and numbers ("past_sequence_length + 1", as exporters write a mask over
      // the cache and the new tokens) is the sum of their values.
      DimRole role = DimRole::unknown;
      std::optional<std::int64_t> value;
      if (param.find('+') != std::string::npos) {
        value = 0;
        for (const auto& term : split_sum(param)) {
          std::optional<std::int64_t> term_value;
          if (!term.empty() && term.size() <= 12 &&
              std::all_of(term.begin(), term.end(), [](unsigned char c) { return std::isdigit(c); })) {
            term_value = std::stoll(term);
          } else {
            role = dim_role(term, -1, false);
            term_value = value_of(role);
          }
          if (!term_value) {
            value.reset();
            break;
          }
          if (__builtin_add_overflow(*value, *term_value, &*value)) {
            throw InputError(fmt::format("{}: dimension {} ('{}') of input '{}' overflows", where, i, param,
                                         input.name()));
          }
        }
        if (value && *value <= 0) {
          throw InputError(fmt::format("{}: dimension {} ('{}') of input '{}' comes to {}, not a positive size",
                                       where, i, param, input.name(), *value));
        }
      } else {
        role = dim_role(param, i, integer_input);
        value = value_of(role);
        has_batch = has_batch || (role == DimRole::batch && batch.has_value());
      }
      if (!value) {
        const char* flag = role == DimRole::batch     ? " (--batch)"
                           : role == DimRole::seq     ? " (--seq)"
                           : role == DimRole::context ? " (--context or --seq)"
                                                      : "";
        throw InputError(fmt::format(
            "{}: dimension {} ('{}') of input '{}' is dynamic and has no value{}; give the whole shape "
            "with --input-shape {}=DIMS",
            where, i, param.empty() ? "?" : param, input.name(), flag, input.name()));
      }
      dim->clear_dim_param();
      dim->set_dim_value(*value);
    }
  }
  for (const auto& given : options.input_shapes) {
    if (!input_names.count(given.name)) {
      std::string names;
      for (const auto& n : input_names) names += (names.empty() ? "" : ", ") + n;
      throw InputError(fmt::format("{}: --input-shape names '{}', but the model's inputs are: {}", where,
                                   given.name, names));
    }
  }
  return has_batch ? batch : std::nullopt;
}

}  // namespace truepeak::estimate::onnx_detail::parse
