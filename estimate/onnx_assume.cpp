// Sizes computed from data. A detector's graph keeps the boxes NonMaxSuppression selects, the
// scores NonZero finds above a threshold, a TopK of k = min(1000, boxes found): how many is known
// only when it runs on an image. The rest of the graph is still estimated: each such size is
// assumed (OnnxOptions::data_dependent_size, capped by what the op's inputs allow), named in the
// import's assumptions and warnings, and everything after it gets static shapes from it.
// This file assumes the sizes; which tensors come from data is onnx_assume_taint.cpp's to say,
// the lines that name the assumptions onnx_assume_text.cpp's.
#include "estimate/onnx_assume.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/checked.hpp"
#include "estimate/onnx_assume_detail.hpp"
#include "estimate/onnx_shape_eval.hpp"

namespace truepeak::estimate::onnx_detail {
namespace {

using assume::sizes_from_data;
using assume::Taint;
using assume::taint_of;

using Dims = std::vector<std::int64_t>;
constexpr std::int64_t kUnknown = -1;

std::string label(const onnx::NodeProto& node, int index) {
  return node.name().empty() ? fmt::format("{}_{}", node.op_type(), index) : node.name();
}

struct TypeInfo {
  std::int32_t elem_type = 0;
  std::optional<Dims> dims;  // kUnknown where a dimension has no value; nullopt: no shape at all
};

std::map<std::string, TypeInfo> types_of(const onnx::GraphProto& graph) {
  std::map<std::string, TypeInfo> types;
  const auto record = [&](const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type()) return;
    TypeInfo info;
    info.elem_type = v.type().tensor_type().elem_type();
    if (v.type().tensor_type().has_shape()) {
      Dims dims;
      for (const auto& d : v.type().tensor_type().shape().dim())
        dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : kUnknown);
      info.dims = dims;
    }
    auto& slot = types[v.name()];
    if (!slot.dims || (info.dims && std::count(info.dims->begin(), info.dims->end(), kUnknown) <
                                        std::count(slot.dims->begin(), slot.dims->end(), kUnknown)))
      slot = info;
    else if (slot.elem_type == 0)
      slot.elem_type = info.elem_type;
  };
  for (const auto& v : graph.input()) record(v);
  for (const auto& v : graph.value_info()) record(v);
  for (const auto& v : graph.output()) record(v);
  for (const auto& init : graph.initializer())
    types[init.name()] = {init.data_type(), Dims(init.dims().begin(), init.dims().end())};
  return types;
}

bool complete(const TypeInfo* info) {
  return info && info->dims &&
         std::none_of(info->dims->begin(), info->dims->end(), [](std::int64_t d) { return d < 0; });
}

std::optional<std::int64_t> count_of(const Dims& dims) { return element_count(dims); }

std::optional<std::int64_t> attr_int(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name && a.type() == onnx::AttributeProto::INT) return a.i();
  }
  return std::nullopt;
}

// What an assumed dimension of `node`'s output `k` stands for, and the most it can be.
struct Reading {
  std::string what;
  std::optional<std::int64_t> at_most;
};

class Assumer {
 public:
  Assumer(onnx::ModelProto& model, std::map<std::string, onnx::ValueInfoProto>& assumed,
          std::vector<OnnxAssumption>& assumptions, std::int64_t size)
      : graph_(*model.mutable_graph()), assumed_(assumed), assumptions_(assumptions), size_(size) {
    types_ = types_of(graph_);
    taint_ = taint_of(graph_);
    for (int i = 0; i < graph_.node_size(); ++i) {
      for (const auto& out : graph_.node(i).output()) producer_[out] = i;
    }
    for (const auto& init : graph_.initializer()) {
      if (auto v = known_from_proto(init)) values_[init.name()] = std::move(*v);
    }
  }

  int run() {
    // A tensor computed from one whose shape is not known yet may still come out once that shape
    // is known (a Reshape target from the Shape of NonZero's output, a Loop's trip count from the
    // boxes kept): only nodes none of whose inputs depends on such a tensor, or on a size assumed
    // in this pass, make a size from data in this pass. (A reconciled Concat's output is final: a
    // loop's chain of them is reconciled in one pass.)
    std::set<std::string> pending;
    int done = 0;
    for (int i = 0; i < graph_.node_size(); ++i) {
      auto& node = *graph_.mutable_node(i);
      const bool inputs_known =
          std::all_of(node.input().begin(), node.input().end(), [&](const std::string& in) {
            return in.empty() || (complete(type(in)) && !pending.count(in));
          });
      bool assumed_here = false;
      if (inputs_known) {
        if (node.op_type() == "Concat" && !sizes_from_data(node, taint_)) {
          done += reconcile(node, i);
        } else if (sizes_from_data(node, taint_)) {
          const int n =
              node.op_type() == "Loop" || node.op_type() == "If" ? control(node, i) : fill(node, i);
          done += n;
          assumed_here = n > 0;
        }
      }
      for (const auto& out : node.output()) {
        if (!out.empty() && (!inputs_known || assumed_here || !complete(type(out))))
          pending.insert(out);
      }
    }
    return done;
  }

 private:
  const TypeInfo* type(const std::string& name) const {
    const auto it = types_.find(name);
    return it == types_.end() ? nullptr : &it->second;
  }
  const Dims& dims(const std::string& name) const { return *types_.at(name).dims; }

  // The output shape inference could not give: its rank from inference or the op, its unknown
  // dimensions kUnknown.
  std::optional<Dims> partial(const onnx::NodeProto& node, int k) const {
    const auto* info = type(node.output(k));
    auto dims = info && info->dims ? info->dims : rank_of_output(node, k);
    if (!dims || k != 0) return dims;
    // What the shape operand's known elements say (inference gives up on the whole operand).
    if (const auto refined = from_shape_operand(node); refined && refined->size() == dims->size()) {
      for (std::size_t a = 0; a < dims->size(); ++a) {
        if ((*dims)[a] < 0) (*dims)[a] = (*refined)[a];
      }
    }
    return dims;
  }

  // The values of a small integer tensor, element by element where only some are known: a
  // Concat of pieces of which some were folded (torch.zeros(y0, mask.size(1)): y0 from a box,
  // the width from a shape).
  std::optional<std::vector<std::optional<std::int64_t>>> partial_values(const std::string& name,
                                                                         int depth = 0) const {
    if (const auto it = values_.find(name); it != values_.end()) {
      if (it->second.is_real() || it->second.dims.size() > 1) return std::nullopt;
      return std::vector<std::optional<std::int64_t>>(it->second.ints.begin(),
                                                      it->second.ints.end());
    }
    const auto p = producer_.find(name);
    if (p == producer_.end() || depth > 8) return std::nullopt;
    const auto& node = graph_.node(p->second);
    if ((node.op_type() == "Cast" || node.op_type() == "Identity") && node.input_size() == 1)
      return partial_values(node.input(0), depth + 1);
    if (node.op_type() != "Concat") return std::nullopt;
    std::vector<std::optional<std::int64_t>> out;
    for (const auto& in : node.input()) {
      if (auto piece = partial_values(in, depth + 1)) {
        out.insert(out.end(), piece->begin(), piece->end());
        continue;
      }
      const auto* t = type(in);
      if (!complete(t) || t->dims->size() != 1) return std::nullopt;
      out.insert(out.end(), static_cast<std::size_t>((*t->dims)[0]), std::nullopt);
    }
    return out;
  }

  // An output shape from the known elements of a Reshape's, ConstantOfShape's, Expand's or
  // Tile's shape operand (kUnknown for the others).
  std::optional<Dims> from_shape_operand(const onnx::NodeProto& node) const {
    const auto& op = node.op_type();
    const int operand = op == "ConstantOfShape" ? 0 : 1;
    if ((op != "ConstantOfShape" && op != "Reshape" && op != "Expand" && op != "Tile") ||
        node.input_size() <= operand)
      return std::nullopt;
    const auto values = partial_values(node.input(operand));
    if (!values) return std::nullopt;
    const auto value = [&](std::size_t i) { return (*values)[i].value_or(kUnknown); };
    Dims out;
    if (op == "ConstantOfShape") {
      for (std::size_t i = 0; i < values->size(); ++i)
        out.push_back(value(i) >= 0 ? value(i) : kUnknown);
      return out;
    }
    const Dims& x = dims(node.input(0));
    if (op == "Tile") {
      if (values->size() != x.size()) return std::nullopt;
      for (std::size_t i = 0; i < x.size(); ++i) {
        const auto product = value(i) >= 0 ? checked_mul(x[i], value(i)) : std::nullopt;
        out.push_back(product.value_or(kUnknown));
      }
      return out;
    }
    if (op == "Expand") {
      // Aligned at the last axis; a dimension other than 1 stays whatever the operand says.
      const std::size_t rank = std::max(x.size(), values->size());
      for (std::size_t i = 0; i < rank; ++i) {
        const auto xi = i + x.size() >= rank ? x[i + x.size() - rank] : 1;
        const auto vi = i + values->size() >= rank ? value(i + values->size() - rank) : 1;
        out.push_back(xi != 1 ? xi : vi >= 0 ? vi : kUnknown);
      }
      return out;
    }
    // Reshape: 0 copies the input's dimension (unless allowzero), -1 is what the others leave.
    const bool allow_zero = attr_int(node, "allowzero").value_or(0) != 0;
    for (std::size_t i = 0; i < values->size(); ++i) {
      const auto v = value(i);
      out.push_back(v == 0 && !allow_zero ? (i < x.size() ? x[i] : kUnknown)
                    : v >= 0              ? v
                                          : kUnknown);
    }
    return out;
  }

  // The rank of an output that inference left without a shape: from the op, its unknown
  // dimensions kUnknown.
  std::optional<Dims> rank_of_output(const onnx::NodeProto& node, int k) const {
    const auto& op = node.op_type();
    const auto in = [&](int i) -> const Dims* {
      return i < node.input_size() && !node.input(i).empty() ? &dims(node.input(i)) : nullptr;
    };
    const auto all_unknown = [](std::size_t rank) { return Dims(rank, kUnknown); };
    const auto length_of = [&](int i) -> std::optional<Dims> {
      const auto* d = in(i);
      if (!d || d->size() != 1) return std::nullopt;
      return all_unknown(static_cast<std::size_t>((*d)[0]));
    };
    if (op == "NonZero" && in(0)) return Dims{static_cast<std::int64_t>(in(0)->size()), kUnknown};
    if (op == "NonMaxSuppression") return Dims{kUnknown, 3};
    if (op == "Range") return Dims{kUnknown};
    if (op == "Reshape" || op == "ConstantOfShape") return length_of(op == "Reshape" ? 1 : 0);
    if ((op == "Tile" || op == "Resize" || op == "Upsample" || op == "Slice" || op == "Pad") &&
        in(0))
      return all_unknown(in(0)->size());
    if (op == "TopK" && in(0)) {
      Dims d = *in(0);
      const auto axis = attr_int(node, "axis").value_or(-1);
      const auto rank = static_cast<std::int64_t>(d.size());
      if (axis < -rank || axis >= rank) return std::nullopt;
      d[static_cast<std::size_t>(axis < 0 ? axis + rank : axis)] = kUnknown;
      return d;
    }
    if ((op == "Compress" || op == "Unique") && in(0)) {
      const auto axis = attr_int(node, "axis");
      if (!axis || k > 0) return Dims{kUnknown};
      Dims d = *in(0);
      const auto rank = static_cast<std::int64_t>(d.size());
      if (*axis < -rank || *axis >= rank) return std::nullopt;
      d[static_cast<std::size_t>(*axis < 0 ? *axis + rank : *axis)] = kUnknown;
      return d;
    }
    return std::nullopt;
  }

  Reading reading(const onnx::NodeProto& node, std::size_t axis) const {
    const auto& op = node.op_type();
    const Dims* x =
        node.input_size() > 0 && !node.input(0).empty() ? &dims(node.input(0)) : nullptr;
    if (op == "NonZero") return {"nonzero elements", x ? count_of(*x) : std::nullopt};
    if (op == "Unique") return {"distinct elements", x ? count_of(*x) : std::nullopt};
    if (op == "Compress") return {"elements kept", x ? count_of(*x) : std::nullopt};
    if (op == "NonMaxSuppression") {
      // batches x classes x min(boxes, max_output_boxes_per_class)
      if (node.input_size() < 2) return {"boxes kept", std::nullopt};
      const Dims& boxes = dims(node.input(0));
      const Dims& scores = dims(node.input(1));
      if (boxes.size() != 3 || scores.size() != 3) return {"boxes kept", std::nullopt};
      std::int64_t per_class = boxes[1];
      if (node.input_size() > 2 && !node.input(2).empty()) {
        const auto it = values_.find(node.input(2));
        if (it != values_.end() && it->second.size() == 1 && !it->second.is_real())
          per_class = std::clamp<std::int64_t>(it->second.ints[0], 0, per_class);
      }
      const auto pairs = checked_mul(scores[0], scores[1]);
      return {"boxes kept", pairs ? checked_mul(*pairs, per_class) : std::nullopt};
    }
    if (op == "TopK")
      return {"k", x && axis < x->size() ? std::optional((*x)[axis]) : std::nullopt};
    // An op that selects from its input (Slice) has at most the input's size on each axis.
    if (op == "Slice" && x && axis < x->size()) return {"elements sliced", (*x)[axis]};
    return {"output size", std::nullopt};
  }

  void record(const onnx::NodeProto& node, int index, const std::string& what, std::int64_t assumed,
              std::optional<std::int64_t> at_most) {
    OnnxAssumption a;
    a.node = label(node, index);
    a.op_type = node.op_type();
    a.what = what;
    a.assumed = assumed;
    a.at_most = at_most;
    assumptions_.push_back(std::move(a));
  }

  int fill(const onnx::NodeProto& node, int index) {
    const bool outputs_known =
        std::all_of(node.output().begin(), node.output().end(),
                    [&](const std::string& out) { return out.empty() || complete(type(out)); });
    if (outputs_known) return 0;
    int filled = 0;
    std::optional<Reading> first;
    std::int64_t first_value = 0;
    for (int k = 0; k < node.output_size(); ++k) {
      const auto& out = node.output(k);
      if (out.empty() || complete(type(out))) continue;
      auto shape = partial(node, k);
      if (!shape) continue;
      // A resize of data-dependent size changes the spatial axes only (PyTorch's interpolate keeps
      // the batch and the channels).
      const bool resize = node.op_type() == "Resize" || node.op_type() == "Upsample";
      const Dims* x =
          node.input_size() > 0 && !node.input(0).empty() ? &dims(node.input(0)) : nullptr;
      for (std::size_t a = 0; a < shape->size(); ++a) {
        if ((*shape)[a] >= 0) continue;
        if (resize && x && a < 2 && x->size() == shape->size() && x->size() >= 3) {
          (*shape)[a] = (*x)[a];
          continue;
        }
        const auto r = reading(node, a);
        const std::int64_t value = r.at_most ? std::min(size_, *r.at_most) : size_;
        (*shape)[a] = value;
        if (!first) {
          first = r;
          first_value = value;
        }
      }
      const auto* info = type(out);
      std::int32_t elem_type = info ? info->elem_type : 0;
      if (elem_type == 0) {
        const bool indices = node.op_type() == "NonZero" || node.op_type() == "NonMaxSuppression" ||
                             (node.op_type() == "TopK" && k == 1) ||
                             (node.op_type() == "Unique" && k > 0);
        const auto* x = node.input_size() > 0 ? type(node.input(0)) : nullptr;
        elem_type = indices || !x ? onnx::TensorProto::INT64 : x->elem_type;
      }
      onnx::ValueInfoProto value;
      value.set_name(out);
      auto* tensor = value.mutable_type()->mutable_tensor_type();
      tensor->set_elem_type(elem_type);
      for (const auto d : *shape) tensor->mutable_shape()->add_dim()->set_dim_value(d);
      assumed_[out] = value;
      types_[out] = {elem_type, *shape};
      ++filled;
    }
    if (first) record(node, index, first->what, first_value, first->at_most);
    return filled;
  }

  // A Concat of tensors sized from data whose sizes, assumed one by one, disagree outside the
  // concatenation axis (a mask pasted from zeros above, the mask and zeros below: together the
  // image's height, apart three assumed sizes): the larger size on each such axis, the sum on it.
  int reconcile(const onnx::NodeProto& node, int index) {
    if (node.output_size() != 1 || node.input_size() == 0 || complete(type(node.output(0))))
      return 0;
    const bool from_data =
        std::any_of(node.input().begin(), node.input().end(),
                    [&](const std::string& in) { return taint_.shape.count(in) > 0; });
    if (!from_data) return 0;
    const Dims& first = dims(node.input(0));
    const auto rank = static_cast<std::int64_t>(first.size());
    auto axis = attr_int(node, "axis").value_or(0);
    if (rank == 0 || axis < -rank || axis >= rank) return 0;
    if (axis < 0) axis += rank;
    Dims out(first.size(), 0);
    for (const auto& in : node.input()) {
      const Dims& d = dims(in);
      if (d.size() != first.size()) return 0;
      for (std::size_t a = 0; a < d.size(); ++a) {
        if (static_cast<std::int64_t>(a) == axis) {
          const auto sum = checked_add(out[a], d[a]);
          if (!sum) return 0;
          out[a] = *sum;
        } else {
          out[a] = std::max(out[a], d[a]);
        }
      }
    }
    const auto* info = type(node.output(0));
    onnx::ValueInfoProto value;
    value.set_name(node.output(0));
    auto* tensor = value.mutable_type()->mutable_tensor_type();
    const auto* x = type(node.input(0));
    tensor->set_elem_type(info && info->elem_type ? info->elem_type
                          : x                     ? x->elem_type
                                                  : onnx::TensorProto::FLOAT);
    for (const auto d : out) tensor->mutable_shape()->add_dim()->set_dim_value(d);
    assumed_[node.output(0)] = value;
    types_[node.output(0)] = {tensor->elem_type(), out};
    // Recorded with the larger size taken (the same in each copy of a loop body).
    std::int64_t taken = 0;
    for (std::size_t a = 0; a < out.size(); ++a) {
      if (static_cast<std::int64_t>(a) != axis) taken = std::max(taken, out[a]);
    }
    record(node, index, "inputs reconciled", taken, std::nullopt);
    return 1;
  }

  // A Loop whose trip count comes from the data runs `size_` times; an If on data takes its
  // larger branch. Rewritten as constants, for the folding to unroll or inline.
  int control(onnx::NodeProto& node, int index) {
    const auto known = [&](int k) {
      return k < node.input_size() && values_.count(node.input(k)) > 0;
    };
    if (node.op_type() == "If") {
      if (node.input_size() < 1 || known(0) || !taint_.value.count(node.input(0))) return 0;
      std::int64_t then_nodes = 0, else_nodes = 0;
      for (const auto& a : node.attribute()) {
        if (a.name() == "then_branch" && a.has_g()) then_nodes = a.g().node_size();
        if (a.name() == "else_branch" && a.has_g()) else_nodes = a.g().node_size();
      }
      const bool then = then_nodes >= else_nodes;
      Known cond;
      cond.type = onnx::TensorProto::BOOL;
      cond.ints = {then ? 1 : 0};
      node.set_input(0, add_constant(cond, node.input(0) + "__assumed"));
      record(node, index, "branch", then ? 1 : 0, std::nullopt);
      return 1;
    }
    // Loop: a trip count from data takes the size; a condition from data is taken to hold (the
    // loop then runs its trip count, if the body keeps the condition).
    if (node.input_size() < 2) return 0;
    int changed = 0;
    if (!node.input(0).empty() && !known(0) && taint_.value.count(node.input(0))) {
      Known trips;
      trips.ints = {size_};
      node.set_input(0, add_constant(trips, node.input(0) + "__assumed"));
      record(node, index, "trip count", size_, std::nullopt);
      ++changed;
    }
    if (!node.input(1).empty() && !known(1) && taint_.value.count(node.input(1))) {
      Known cond;
      cond.type = onnx::TensorProto::BOOL;
      cond.ints = {1};
      node.set_input(1, add_constant(cond, node.input(1) + "__assumed"));
      ++changed;
    }
    return changed;
  }

  std::string add_constant(const Known& value, const std::string& base) {
    std::string name = base;
    for (int k = 1; types_.count(name); ++k) name = fmt::format("{}_{}", base, k);
    *graph_.add_initializer() = known_to_proto(value, name);
    types_[name] = {value.type, value.dims};
    values_[name] = value;
    return name;
  }

  onnx::GraphProto& graph_;
  std::map<std::string, onnx::ValueInfoProto>& assumed_;
  std::vector<OnnxAssumption>& assumptions_;
  std::int64_t size_;
  std::map<std::string, TypeInfo> types_;
  std::map<std::string, Known> values_;
  std::map<std::string, int> producer_;
  Taint taint_;
};

}  // namespace

int assume_data_dependent(onnx::ModelProto& model,
                          std::map<std::string, onnx::ValueInfoProto>& assumed,
                          std::vector<OnnxAssumption>& assumptions, std::int64_t size) {
  return Assumer(model, assumed, assumptions, size).run();
}

}  // namespace truepeak::estimate::onnx_detail
