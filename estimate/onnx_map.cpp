// ONNX nodes -> estimator ops, with the rewrites an inference runtime applies. The mapping table
// is in onnx_import.hpp; the rewrites, and why each one:
// - constant subgraphs (Shape/Gather/Concat chains feeding Reshape, masks built from Range) are
//   computed once at load time by every runtime: free;
// - BatchNormalization after a Conv folds into it; MatMul + Add(bias) is one linear with a bias
//   epilogue; a Transpose that only swaps the last two axes of a MatMul operand is a transposed
//   GEMM operand, not a copy;
// - elementwise regions that exporters produce for one framework op (erf/tanh GELU, SiLU,
//   HardSwish, LayerNorm/RMSNorm from ReduceMean/Sub/Pow/Sqrt/Div, Softmax from
//   ReduceMax/Exp/ReduceSum/Div) become that one op again;
// - optionally, an activation right after a GEMM/conv is folded into it (epilogue fusion).
// Node types it does not know are costed memory-bound on their tensors and counted.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "estimate/builder.hpp"
#include "estimate/onnx_graph.hpp"

namespace truepeak::estimate::onnx_detail {
namespace {

using Dims = std::vector<std::int64_t>;

const std::set<std::string>& unary_ops() {
  static const std::set<std::string> ops = {
      "Relu", "Gelu", "Sigmoid", "Tanh", "Erf", "Exp", "Log", "Sqrt", "Reciprocal", "Neg", "Abs", "Clip",
      "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Mish",
      "Sin", "Cos", "Floor", "Ceil", "Round", "Sign", "Not", "IsNaN", "IsInf", "ThresholdedRelu", "Cast",
      "CastLike", "PRelu"};
  return ops;
}
const std::set<std::string>& binary_ops() {
  static const std::set<std::string> ops = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod",
                                            "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
                                            "And", "Or", "Xor", "Where", "Sum", "Mean", "BitShift"};
  return ops;
}
const std::set<std::string>& reduce_ops() {
  static const std::set<std::string> ops = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin",
                                            "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                                            "ReduceLogSumExp", "ArgMax", "ArgMin"};
  return ops;
}
// Pure views or no-ops at inference: no data moves.
const std::set<std::string>& view_ops() {
  static const std::set<std::string> ops = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity",
                                            "Dropout", "Slice", "Split"};
  return ops;
}
// Real copies: every output element written once, as much read.
const std::set<std::string>& copy_ops() {
  static const std::set<std::string> ops = {"Expand", "Tile", "Pad", "Resize", "Upsample", "GatherElements",
                                            "GatherND", "ScatterND", "ScatterElements", "DepthToSpace",
                                            "SpaceToDepth", "TopK", "Trilu", "CumSum", "OneHot"};
  return ops;
}
// Ops whose output depends only on input shapes (known at load time) or nothing at all.
const std::set<std::string>& shape_only_ops() {
  static const std::set<std::string> ops = {"Shape", "Size", "Constant", "EyeLike", "RandomNormal",
                                            "RandomUniform", "RandomNormalLike", "RandomUniformLike"};
  return ops;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// Element count, saturated at the int64 maximum (a count that large is refused where the
// estimate binds the graph, naming the op).
std::int64_t numel(const Dims& dims) {
  std::int64_t n = 1;
  for (const auto d : dims) n = checked_mul(n, d).value_or(std::numeric_limits<std::int64_t>::max());
  return n;
}

Shape to_shape(const Dims& dims) { return Shape(dims.begin(), dims.end()); }

class Mapper {
 public:
  // Nodes rebuilt into one framework op: read `input` (+ weights), write `output`.
  struct Region {
    OpKind kind;
    std::string fn;
    std::string input;
    std::string output;
    std::vector<std::string> weights;
  };

  Mapper(ParsedGraph graph, const OnnxOptions& options) : g_(std::move(graph)), options_(options) {
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      for (const auto& out : g_.nodes[i].outputs) producer_[out] = static_cast<int>(i);
      for (const auto& in : g_.nodes[i].inputs) {
        if (!in.empty()) consumers_[in].push_back(static_cast<int>(i));
      }
    }
    for (const auto& out : g_.outputs) consumers_[out].push_back(-1);
    done_.assign(g_.nodes.size(), false);
  }

  OnnxImport run() {
    fold_constants();
    fuse_batchnorm_into_conv();
    fuse_bias_into_gemm();
    fold_transposes_into_matmul();
    find_framework_regions();
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      if (!done_[i]) emit(static_cast<int>(i));
    }
    finish();
    return std::move(result_);
  }

 private:
  // ---- tensor facts ----------------------------------------------------------------------
  bool is_constant(const std::string& t) const { return t.empty() || constants_.count(t) > 0; }
  bool has_shape(const std::string& t) const { return g_.shapes.count(t) > 0; }
  const Dims& shape_of(const std::string& t, const Node& node) const {
    const auto it = g_.shapes.find(t);
    if (it == g_.shapes.end()) {
      throw InputError(fmt::format("{}: the shape of '{}' (read by node '{}', {}) is unknown{}",
                                   g_.where, t, node.name, node.op_type, why_unshaped(t)));
    }
    return it->second;
  }
  // Why a tensor has no shape: the first node on the way to it whose output shape could not be
  // evaluated although its inputs' shapes are known, what it read, and what the user can give.
  std::string why_unshaped(const std::string& t) const {
    std::string current = t;
    std::set<std::string> seen;
    int root = -1;
    while (seen.insert(current).second) {
      const auto writer = producer_.find(current);
      if (writer == producer_.end()) break;
      root = writer->second;
      const auto& inputs = g_.nodes[root].inputs;
      const auto next = std::find_if(inputs.begin(), inputs.end(), [&](const std::string& in) {
        return !in.empty() && !has_shape(in) && producer_.count(in) && !seen.count(in);
      });
      if (next == inputs.end()) break;
      current = *next;
    }
    std::string bound;
    for (const auto& in : g_.inputs) {
      const auto s = g_.shapes.find(in);
      if (s != g_.shapes.end())
        bound += fmt::format("{}{} [{}]", bound.empty() ? "" : ", ", in, fmt::join(s->second, ","));
    }
    const std::string give = fmt::format(
        "the inputs are bound to {}; give other input shapes with --input-shape NAME=DIMS, and the "
        "size taken for dimensions computed from data with --data-dependent-size N",
        bound.empty() ? "nothing" : bound);
    if (root < 0) return fmt::format(" after ONNX shape inference; {}", give);
    const Node& r = g_.nodes[root];
    std::string read;
    for (const auto& in : r.inputs) {
      if (in.empty()) continue;
      const auto s = g_.shapes.find(in);
      const auto v = g_.small_values.find(in);
      read += fmt::format("{}'{}' {}{}", read.empty() ? "" : ", ", in,
                          s == g_.shapes.end() ? std::string("(shape unknown)")
                                               : fmt::format("[{}]", fmt::join(s->second, ",")),
                          v == g_.small_values.end() ? std::string() : " = " + v->second);
    }
    const bool from_data =
        std::any_of(r.outputs.begin(), r.outputs.end(),
                    [&](const std::string& o) { return g_.data_shaped.count(o) > 0; });
    return fmt::format(
        ": the first op whose output shape could not be evaluated is '{}' ({}), reading {}; {}; {}",
        r.name, r.op_type, read.empty() ? "nothing" : read,
        from_data ? "its output size depends on the data, and its rank is unknown"
                  : "its output shape depends on values not computed from the input shapes",
        give);
  }
  // A parameter: a floating-point constant with more than one element (scalars such as eps or
  // the GELU constants live in registers, not memory).
  bool is_parameter(const std::string& t) const {
    return is_constant(t) && !t.empty() && g_.float_tensors.count(t) && has_shape(t) &&
           numel(g_.shapes.at(t)) > 1;
  }
  int single_consumer(const std::string& t) const {
    const auto it = consumers_.find(t);
    if (it == consumers_.end() || it->second.size() != 1) return -1;
    return it->second.front();
  }
  TensorRef ref(const std::string& t, const Node& node) const { return {t, to_shape(shape_of(t, node))}; }
  // For ops costed on whatever shapes are known: unknown ones are left out and reported once.
  std::optional<TensorRef> ref_if_known(const std::string& t, const Node& node) {
    if (t.empty()) return std::nullopt;
    if (!has_shape(t)) {
      if (unshaped_.insert(t).second) {
        result_.warnings.push_back(fmt::format("shape of '{}' ({} '{}') unknown after shape inference: "
                                               "not counted in its bytes",
                                               t, node.op_type, node.name));
      }
      return std::nullopt;
    }
    return ref(t, node);
  }
  void count_fusion(const std::string& what) { ++result_.fusions[what]; }
  [[noreturn]] void fail(const Node& node, const std::string& why) const {
    throw InputError(fmt::format("{}: node '{}' ({}): {}", g_.where, node.name, node.op_type, why));
  }
  // The shape of a GEMM's, convolution's or pool's output, which its cost reads: known, of
  // `rank` dimensions (any rank when 0), none of them 0. Shape inference leaves it unknown when
  // the node's attributes do not fit its inputs.
  const Dims& require_output(const Node& node, const std::string& out, std::size_t rank = 0) const {
    const auto it = g_.shapes.find(out);
    if (it == g_.shapes.end())
      fail(node, fmt::format("the shape of its output '{}' is unknown after ONNX shape inference (do its "
                             "attributes fit its inputs?)",
                             out));
    if (rank != 0 && it->second.size() != rank)
      fail(node, fmt::format("its output '{}' has {} dimensions, expected {}", out, it->second.size(), rank));
    require_positive(node, out, it->second);
    return it->second;
  }
  void require_positive(const Node& node, const std::string& tensor, const Dims& dims) const {
    if (std::any_of(dims.begin(), dims.end(), [](std::int64_t d) { return d < 1; }))
      fail(node, fmt::format("'{}' is empty ([{}]): a product or window over it does no work", tensor,
                             fmt::join(dims, ",")));
  }

  // ---- rewrites --------------------------------------------------------------------------
  void fold_constants() {
    constants_ = g_.initializers;
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      const auto& node = g_.nodes[i];
      if (node.has_subgraph) continue;
      bool constant = shape_only_ops().count(node.op_type) > 0;
      if (!constant) {
        constant = std::all_of(node.inputs.begin(), node.inputs.end(),
                               [&](const std::string& t) { return is_constant(t); }) &&
                   !node.inputs.empty();
      }
      if (constant) {
        for (const auto& out : node.outputs) constants_.insert(out);
        done_[i] = true;
        ++folded_;
      }
    }
  }

  void fuse_batchnorm_into_conv() {
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      const auto& node = g_.nodes[i];
      if (done_[i] || node.op_type != "Conv" || node.outputs.size() != 1) continue;
      const int next = single_consumer(node.outputs[0]);
      if (next < 0 || done_[next] || g_.nodes[next].op_type != "BatchNormalization") continue;
      const auto& bn = g_.nodes[next];
      if (!std::all_of(bn.inputs.begin() + 1, bn.inputs.end(), [&](const auto& t) { return is_constant(t); }))
        continue;
      output_alias_[i] = bn.outputs[0];
      done_[next] = true;
      count_fusion("batchnorm folded into conv");
    }
  }

  void fuse_bias_into_gemm() {
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      const auto& node = g_.nodes[i];
      if (done_[i] || (node.op_type != "MatMul" && node.op_type != "Gemm" && node.op_type != "Conv")) continue;
      if (node.op_type == "Gemm" && node.inputs.size() > 2 && !node.inputs[2].empty()) continue;
      if (node.op_type == "Conv" && node.inputs.size() > 2 && !node.inputs[2].empty()) continue;
      const std::string out = output_of(static_cast<int>(i));
      if (!has_shape(out)) continue;
      const int next = single_consumer(out);
      if (next < 0 || done_[next] || g_.nodes[next].op_type != "Add" || g_.nodes[next].inputs.size() != 2) continue;
      const auto& add = g_.nodes[next];
      const std::string& bias = add.inputs[0] == out ? add.inputs[1] : add.inputs[0];
      if (!is_constant(bias) || !has_shape(bias)) continue;
      // A bias broadcasts along the output feature axis only.
      const auto& out_dims = g_.shapes.at(out);
      const auto& bias_dims = g_.shapes.at(bias);
      const std::int64_t features = node.op_type == "Conv" ? (out_dims.size() > 1 ? out_dims[1] : 0)
                                                            : (out_dims.empty() ? 0 : out_dims.back());
      if (numel(bias_dims) != features) continue;
      bias_[i] = bias;
      output_alias_[i] = add.outputs[0];
      done_[next] = true;
      count_fusion(node.op_type == "Conv" ? "bias add into conv" : "bias add into linear/matmul");
    }
  }

  // Transpose(perm swaps the last two axes) feeding only MatMuls: GEMM libraries read the
  // operand transposed, no copy is made.
  void fold_transposes_into_matmul() {
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      const auto& node = g_.nodes[i];
      if (done_[i] || node.op_type != "Transpose" || node.outputs.size() != 1) continue;
      const auto perm = node.ints_attr("perm");
      const auto n = static_cast<std::int64_t>(perm.size());
      if (n < 2) continue;
      bool swaps_last_two = perm[n - 1] == n - 2 && perm[n - 2] == n - 1;
      for (std::int64_t a = 0; a + 2 < n && swaps_last_two; ++a) swaps_last_two = perm[a] == a;
      if (!swaps_last_two) continue;
      const auto it = consumers_.find(node.outputs[0]);
      if (it == consumers_.end()) continue;
      const bool only_matmul = std::all_of(it->second.begin(), it->second.end(), [&](int c) {
        return c >= 0 && !done_[c] && g_.nodes[c].op_type == "MatMul";
      });
      if (!only_matmul) continue;
      transposed_source_[node.outputs[0]] = node.inputs[0];
      done_[i] = true;
      count_fusion("transpose folded into matmul operand");
    }
  }

  bool is_region_op(const Node& node) const {
    return unary_ops().count(node.op_type) || binary_ops().count(node.op_type) ||
           (reduce_ops().count(node.op_type) && node.op_type.rfind("Arg", 0) != 0);
  }

  // What a region of elementwise/reduce nodes fed by one tensor computes, when it is one
  // framework op that the exporter decomposed; nullopt otherwise (its nodes stay separate).
  struct RegionKind {
    OpKind kind;
    std::string fn;
  };
  static std::optional<RegionKind> classify(const std::multiset<std::string>& ops) {
    auto has = [&](const char* op) { return ops.count(op) > 0; };
    if (ops.size() < 2) return std::nullopt;
    if (has("Erf") && ops.size() <= 6) return RegionKind{OpKind::elementwise, "gelu"};
    // GELU's tanh approximation (GPT-2's): a function of its own in the libraries, timed apart.
    if (has("Tanh") && has("Pow") && ops.size() <= 9) return RegionKind{OpKind::elementwise, "gelu_tanh"};
    if (has("Tanh") && ops.count("Mul") >= 3 && ops.size() <= 9) {
      return RegionKind{OpKind::elementwise, "gelu_tanh"};
    }
    if (has("ReduceMean") && has("Sqrt") && ops.size() <= 11) {
      return RegionKind{OpKind::norm, has("Sub") ? "layernorm" : "rmsnorm"};
    }
    if (has("Exp") && has("ReduceSum") && ops.size() <= 6) return RegionKind{OpKind::softmax, ""};
    if (ops.size() == 2 && has("Sigmoid") && has("Mul")) return RegionKind{OpKind::elementwise, "silu"};
    if (ops.size() == 2 && has("HardSigmoid") && has("Mul")) return RegionKind{OpKind::elementwise, "hardswish"};
    if (ops.size() == 4 && has("Clip") && has("Mul") && has("Div") && has("Add")) {
      return RegionKind{OpKind::elementwise, "hardswish"};
    }
    if (ops.size() == 3 && has("Softplus") && has("Tanh") && has("Mul")) {
      return RegionKind{OpKind::elementwise, "mish"};
    }
    return std::nullopt;
  }

  void find_framework_regions() {
    // source[i]: the one non-constant tensor node i depends on through region nodes, if any.
    std::map<int, std::string> source;
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      const auto& node = g_.nodes[i];
      if (done_[i] || !is_region_op(node)) continue;
      std::set<std::string> sources;
      for (const auto& t : node.inputs) {
        if (is_constant(t)) continue;
        const auto p = producer_.find(t);
        if (p != producer_.end() && source.count(p->second)) {
          sources.insert(source.at(p->second));
        } else {
          sources.insert(t);
        }
      }
      if (sources.size() == 1) source[static_cast<int>(i)] = *sources.begin();
    }
    std::map<std::string, std::vector<int>> regions;
    for (const auto& [node, src] : source) regions[src].push_back(node);
    for (auto& [src, members] : regions) {
      if (members.size() < 2) continue;
      const std::set<int> inside(members.begin(), members.end());
      std::vector<std::string> escaping;
      std::multiset<std::string> ops;
      for (int m : members) {
        ops.insert(g_.nodes[m].op_type);
        for (const auto& out : g_.nodes[m].outputs) {
          const auto it = consumers_.find(out);
          if (it == consumers_.end()) continue;
          if (std::any_of(it->second.begin(), it->second.end(), [&](int c) { return !inside.count(c); })) {
            escaping.push_back(out);
          }
        }
      }
      const auto kind = classify(ops);
      if (escaping.size() != 1 || !kind) continue;
      Region region{kind->kind, kind->fn, src, escaping.front(), {}};
      for (int m : members) {
        for (const auto& t : g_.nodes[m].inputs) {
          if (is_parameter(t) && std::find(region.weights.begin(), region.weights.end(), t) == region.weights.end())
            region.weights.push_back(t);
        }
      }
      // The fused op is emitted where its result is produced: after everything it reads.
      const int last = producer_.at(region.output);
      for (int m : members) {
        done_[m] = true;
        representative_[m] = last;
      }
      done_[last] = false;
      regions_[last] = std::move(region);
      count_fusion(fmt::format("{} rebuilt from {} nodes", kind->fn.empty() ? "softmax" : kind->fn, members.size()));
      ++region_count_;
    }
  }

  std::string output_of(int node) const {
    const auto alias = output_alias_.find(node);
    return alias != output_alias_.end() ? alias->second : g_.nodes[node].outputs.at(0);
  }

  // ---- emission --------------------------------------------------------------------------
  Op make_op(const Node& node, OpKind kind, std::string fn = {}) {
    Op op;
    op.name = node.name;
    op.kind = kind;
    op.fn = std::move(fn);
    return op;
  }

  void push(Op op) {
    // Epilogue fusion: an activation whose input is the single-use result of a GEMM/conv.
    if (options_.fuse_activations && op.kind == OpKind::elementwise && op.inputs.size() == 1 &&
        op.weights.empty() && epilogue_activations().count(op.fn)) {
      const auto it = op_writing_.find(op.inputs[0].name);
      if (it != op_writing_.end() && effective_uses(op.inputs[0].name) == 1) {
        Op& gemm = result_.model.forward.ops[it->second];
        if ((gemm.kind == OpKind::conv2d || gemm.kind == OpKind::linear || gemm.kind == OpKind::matmul) &&
            gemm.output.shape == op.output.shape) {
          gemm.output = op.output;
          op_writing_.erase(it);
          op_writing_[gemm.output.name] = static_cast<std::size_t>(&gemm - result_.model.forward.ops.data());
          count_fusion(fmt::format("{} epilogue into {}", op.fn, to_string(gemm.kind)));
          return;
        }
      }
    }
    op_writing_[op.output.name] = result_.model.forward.ops.size();
    result_.model.forward.ops.push_back(std::move(op));
  }

  // Readers of a tensor, counting a rebuilt region once.
  std::size_t effective_uses(const std::string& t) const {
    const auto it = consumers_.find(t);
    if (it == consumers_.end()) return 0;
    std::set<int> readers;
    for (int c : it->second) {
      const auto rep = representative_.find(c);
      readers.insert(rep == representative_.end() ? c : rep->second);
    }
    return readers.size();
  }

  static const std::set<std::string>& epilogue_activations() {
    static const std::set<std::string> fns = {"relu", "clip", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh",
                                              "leakyrelu", "hardswish", "elu"};
    return fns;
  }

  void emit(int index) {
    const Node& node = g_.nodes[index];
    if (const auto r = regions_.find(index); r != regions_.end()) return emit_region(node, r->second);
    const std::string& type = node.op_type;
    if (!node.domain.empty() && node.domain != "ai.onnx") return emit_unknown(node);
    if (type == "Conv") return emit_conv(index, node);
    if (type == "Gemm" || type == "MatMul") return emit_gemm(index, node);
    if (type == "BatchNormalization" || type == "LayerNormalization" || type == "InstanceNormalization" ||
        type == "GroupNormalization" || type == "LpNormalization" || type == "MeanVarianceNormalization" ||
        type == "LRN") {
      return emit_norm(node);
    }
    if (type == "Softmax" || type == "LogSoftmax") return emit_simple(node, OpKind::softmax, "");
    if (type == "MaxPool" || type == "AveragePool" || type == "GlobalAveragePool" || type == "GlobalMaxPool" ||
        type == "LpPool") {
      return emit_pool(node);
    }
    if (type == "Gather") return emit_gather(node);
    if (view_ops().count(type)) return emit_view(node);
    if (type == "Transpose") return emit_copy(node, OpKind::transpose);
    if (type == "Concat") return emit_concat(node);
    if (copy_ops().count(type)) return emit_copy(node, OpKind::transpose);
    if (unary_ops().count(type) || binary_ops().count(type) || reduce_ops().count(type)) {
      return emit_simple(node, OpKind::elementwise, lower(type));
    }
    if (type == "ConstantOfShape" || type == "Range") return emit_simple(node, OpKind::elementwise, lower(type));
    emit_unknown(node);
  }

  // Inputs split into activations and parameters; constants that are not parameters (shape
  // vectors, scalars) are left out.
  void add_operands(Op& op, const Node& node, std::size_t first = 0) {
    for (std::size_t i = first; i < node.inputs.size(); ++i) {
      const auto& t = node.inputs[i];
      if (t.empty()) continue;
      if (is_constant(t)) {
        if (is_parameter(t)) op.weights.push_back(ref(t, node));
        continue;
      }
      if (auto r = ref_if_known(t, node)) op.inputs.push_back(*r);
    }
  }

  bool set_output(Op& op, const Node& node, const std::string& out) {
    if (auto r = ref_if_known(out, node)) {
      op.output = *r;
      return true;
    }
    op.output = TensorRef{out, {}};
    return false;
  }

  void emit_simple(const Node& node, OpKind kind, std::string fn) {
    Op op = make_op(node, kind, std::move(fn));
    add_operands(op, node);
    set_output(op, node, node.outputs.at(0));
    push(std::move(op));
  }

  void emit_region(const Node& node, const Region& region) {
    Op op = make_op(node, region.kind, region.fn);
    op.name = fmt::format("{}:{}", node.name, region.fn.empty() ? "softmax" : region.fn);
    if (auto r = ref_if_known(region.input, node)) op.inputs.push_back(*r);
    for (const auto& w : region.weights) op.weights.push_back(ref(w, node));
    set_output(op, node, region.output);
    push(std::move(op));
  }

  // A Conv's or pool's window over the spatial axes of `x` (the axes after batch and channels):
  // one kernel size, stride and dilation per axis, two pads per axis (begin, end). Each window
  // must fit its padded input, or the node has no output to cost.
  struct Window {
    Dims kernel, strides, dilations, pads;
    std::string auto_pad;
  };
  Window window_of(const Node& node, const Dims& x, const Dims& kernel) const {
    if (x.size() < 3) fail(node, fmt::format("its input has {} dimensions, not batch, channels and space", x.size()));
    const std::size_t spatial = x.size() - 2;
    Window win{kernel, node.ints_attr("strides"), node.ints_attr("dilations"), node.ints_attr("pads"),
               node.strings.count("auto_pad") ? node.strings.at("auto_pad") : std::string("NOTSET")};
    if (win.strides.empty()) win.strides.assign(spatial, 1);
    if (win.dilations.empty()) win.dilations.assign(spatial, 1);
    if (win.pads.empty()) win.pads.assign(2 * spatial, 0);
    if (win.kernel.size() != spatial || win.strides.size() != spatial || win.dilations.size() != spatial ||
        win.pads.size() != 2 * spatial) {
      fail(node, fmt::format("kernel [{}], strides [{}], dilations [{}] and pads [{}] do not give {} spatial "
                             "axes (pads two each)",
                             fmt::join(win.kernel, ","), fmt::join(win.strides, ","), fmt::join(win.dilations, ","),
                             fmt::join(win.pads, ","), spatial));
    }
    const bool same = win.auto_pad == "SAME_UPPER" || win.auto_pad == "SAME_LOWER";
    for (std::size_t i = 0; i < spatial; ++i) {
      const std::int64_t k = win.kernel[i], d = win.dilations[i], in = x[2 + i];
      if (k < 1 || win.strides[i] < 1 || d < 1 || win.pads[i] < 0 || win.pads[i + spatial] < 0)
        fail(node, "kernel, strides and dilations must be 1 or more, pads 0 or more");
      const auto window = checked_mul(d, k - 1);
      const auto pads = checked_add(win.pads[i], win.pads[i + spatial]);
      const auto padded = pads ? checked_add(in, win.auto_pad == "VALID" ? 0 : *pads) : std::nullopt;
      if (!window || !padded) fail(node, "its window arithmetic overflows 64 bits");
      // SAME pads the input as the window needs.
      if (!same && *window >= *padded) {
        fail(node, fmt::format("its window of {} (dilation {}) on spatial axis {} is larger than the input's {} "
                               "with pads {}+{}",
                               k, d, i, in, win.auto_pad == "VALID" ? 0 : win.pads[i],
                               win.auto_pad == "VALID" ? 0 : win.pads[i + spatial]));
      }
    }
    return win;
  }

  void emit_conv(int index, const Node& node) {
    const auto& x = shape_of(node.inputs.at(0), node);
    const auto& w = shape_of(node.inputs.at(1), node);
    if (x.size() != 4 && x.size() != 3) {
      result_.warnings.push_back(fmt::format("{}: {}-D convolution costed memory-bound (only 1-D and 2-D are modelled)",
                                             node.name, x.size() < 2 ? 0 : x.size() - 2));
      return emit_unknown(node);
    }
    const bool one_d = x.size() == 3;
    if (w.size() != x.size())
      fail(node, fmt::format("its weight '{}' has {} dimensions, its input {}", node.inputs[1], w.size(), x.size()));
    require_positive(node, node.inputs[0], x);
    require_positive(node, node.inputs[1], w);
    const std::int64_t group = node.int_attr("group", 1);
    const auto channels = checked_mul(w[1], group);
    if (group < 1 || !channels || *channels != x[1] || w[0] % group != 0) {
      fail(node, fmt::format("group {}: its input's {} channels must be the weight's {} per group times the groups, "
                             "and its {} output channels a multiple of the groups",
                             group, x[1], w[1], w[0]));
    }
    const Dims kernel(w.begin() + 2, w.end());
    if (const auto given = node.ints_attr("kernel_shape"); !given.empty() && given != kernel) {
      fail(node, fmt::format("kernel_shape [{}] differs from its weight's [{}]", fmt::join(given, ","),
                             fmt::join(kernel, ",")));
    }
    const Window win = window_of(node, x, kernel);
    Op op = make_op(node, OpKind::conv2d);
    Dims x4 = one_d ? Dims{x[0], x[1], 1, x[2]} : x;
    Dims w4 = one_d ? Dims{w[0], w[1], 1, w[2]} : w;
    op.inputs.push_back({node.inputs[0], to_shape(x4)});
    op.weights.push_back({node.inputs[1], to_shape(w4)});
    const std::string bias = node.inputs.size() > 2 && !node.inputs[2].empty() ? node.inputs[2]
                             : bias_.count(index)                               ? bias_.at(index)
                                                                                : std::string();
    if (!bias.empty() && is_parameter(bias)) op.weights.push_back({bias, Shape{Dim(w4[0])}});
    op.kernel_h = w4[2];
    op.kernel_w = w4[3];
    op.groups = group;
    const std::size_t spatial = one_d ? 1 : 2;
    // The op carries one stride/pad/dilation: the width one (the height one for 1-D is 1).
    const std::size_t axis = spatial - 1;
    op.stride = win.strides[axis];
    op.dilation = win.dilations[axis];
    if (win.auto_pad == "SAME_UPPER" || win.auto_pad == "SAME_LOWER") {
      // Half the padding SAME adds: (out - 1) x stride + window - in, where (out - 1) x stride < in.
      const std::int64_t in = x4[3];
      const std::int64_t out = in / op.stride + (in % op.stride != 0);
      const auto window = checked_mul(w4[3] - 1, op.dilation);
      const auto total = window ? checked_add((out - 1) * op.stride + 1 - in, *window) : std::nullopt;
      if (!total) fail(node, "its window arithmetic overflows 64 bits");
      op.pad = std::max<std::int64_t>(0, *total) / 2;
    } else if (win.auto_pad == "VALID") {
      op.pad = 0;
    } else {
      op.pad = win.pads[axis] / 2 + win.pads[axis + spatial] / 2 + (win.pads[axis] % 2 + win.pads[axis + spatial] % 2) / 2;
    }
    if (!one_d && (win.strides[0] != win.strides[1] || win.dilations[0] != win.dilations[1] ||
                   win.pads[0] != win.pads[1] || win.pads[0] != win.pads[2] || win.pads[1] != win.pads[3])) {
      result_.warnings.push_back(fmt::format(
          "{}: non-uniform strides/pads/dilations {}/{}/{}: costed with the width-axis values", node.name,
          fmt::join(win.strides, ","), fmt::join(win.pads, ","), fmt::join(win.dilations, ",")));
    }
    const std::string out = output_of(index);
    const auto& y = require_output(node, out, x.size());
    op.output = {out, to_shape(one_d ? Dims{y[0], y[1], 1, y[2]} : y)};
    push(std::move(op));
  }

  void emit_gemm(int index, const Node& node) {
    std::string a = node.inputs.at(0), b = node.inputs.at(1);
    bool trans_a = node.op_type == "Gemm" && node.int_attr("transA", 0) != 0;
    bool trans_b = node.op_type == "Gemm" && node.int_attr("transB", 0) != 0;
    if (const auto it = transposed_source_.find(a); it != transposed_source_.end()) {
      a = it->second;
      trans_a = !trans_a;
    }
    if (const auto it = transposed_source_.find(b); it != transposed_source_.end()) {
      b = it->second;
      trans_b = !trans_b;
    }
    const std::string out = output_of(index);
    std::string bias = node.op_type == "Gemm" && node.inputs.size() > 2 ? node.inputs[2] : std::string();
    if (bias.empty() && bias_.count(index)) bias = bias_.at(index);

    Dims a_dims = shape_of(a, node);
    Dims b_dims = shape_of(b, node);
    require_positive(node, a, a_dims);
    require_positive(node, b, b_dims);
    const Dims& y = require_output(node, out);
    if (a_dims.empty() || b_dims.empty()) fail(node, "an operand is a scalar, not a matrix");
    // The inner dimensions, as the node reads its operands.
    const auto inner = [&](const Dims& dims, bool transposed, bool left) {
      if (dims.size() == 1) return dims[0];
      return left != transposed ? dims.back() : dims[dims.size() - 2];
    };
    if (inner(a_dims, trans_a, true) != inner(b_dims, trans_b, false)) {
      fail(node, fmt::format("its operands' inner dimensions differ: [{}]{} x [{}]{}", fmt::join(a_dims, ","),
                             trans_a ? "^T" : "", fmt::join(b_dims, ","), trans_b ? "^T" : ""));
    }
    if (is_parameter(b) && b_dims.size() == 2 && !is_constant(a)) {
      Op op = make_op(node, OpKind::linear);
      if (trans_a && a_dims.size() >= 2) std::swap(a_dims[a_dims.size() - 1], a_dims[a_dims.size() - 2]);
      if (a_dims.size() == 1) a_dims.insert(a_dims.begin(), 1);
      op.inputs.push_back({a, to_shape(a_dims)});
      const std::int64_t in = trans_b ? b_dims[1] : b_dims[0];
      const std::int64_t outf = trans_b ? b_dims[0] : b_dims[1];
      // The weight as [in, out] whatever its stored layout: the library packs it once.
      op.weights.push_back({b, Shape{Dim(in), Dim(outf)}});
      if (!bias.empty() && is_parameter(bias)) op.weights.push_back({bias, Shape{Dim(outf)}});
      op.output = {out, to_shape(y)};
      return push(std::move(op));
    }
    // A vector operand is a matrix of one row (left) or one column (right), as MatMul reads it;
    // the output then has those rows or columns too.
    Dims y_dims = y;
    if (a_dims.size() == 1) {
      a_dims.insert(a_dims.begin(), 1);
      y_dims.insert(y_dims.end() - (b_dims.size() == 1 ? 0 : 1), 1);
    }
    if (b_dims.size() == 1) {
      b_dims.push_back(1);
      y_dims.push_back(1);
    }
    if (y_dims.size() < 2) fail(node, fmt::format("its output '{}' is not a matrix", out));
    Op op = make_op(node, OpKind::matmul);
    op.transpose_a = trans_a;
    op.transpose_b = trans_b;
    (is_constant(a) ? op.weights : op.inputs).push_back({a, to_shape(a_dims)});
    (is_constant(b) ? op.weights : op.inputs).push_back({b, to_shape(b_dims)});
    if (op.inputs.empty()) fail(node, "both operands are constants");
    if (op.inputs[0].shape.size() < 2) fail(node, "an operand is not a matrix");
    if (!bias.empty() && is_parameter(bias)) op.weights.push_back(ref(bias, node));
    op.output = {out, to_shape(y_dims)};
    push(std::move(op));
  }

  void emit_norm(const Node& node) {
    static const std::map<std::string, std::string> fns = {
        {"BatchNormalization", "batchnorm"}, {"LayerNormalization", "layernorm"},
        {"InstanceNormalization", "instancenorm"}, {"GroupNormalization", "groupnorm"},
        {"LpNormalization", "lpnorm"}, {"MeanVarianceNormalization", "mvn"}, {"LRN", "lrn"}};
    Op op = make_op(node, OpKind::norm, fns.at(node.op_type));
    add_operands(op, node);
    set_output(op, node, node.outputs.at(0));
    push(std::move(op));
  }

  void emit_pool(const Node& node) {
    const bool global = node.op_type.rfind("Global", 0) == 0;
    const bool max = node.op_type.find("Max") != std::string::npos;
    // A global pool is a kind of its own (make_pool).
    Op op = make_op(node, OpKind::pool, std::string(global ? "global_" : "") + (max ? "max" : "avg"));
    const auto& x = shape_of(node.inputs.at(0), node);
    require_positive(node, node.inputs[0], x);
    op.inputs.push_back({node.inputs[0], to_shape(x)});
    if (global) {
      op.kernel_h = x.size() > 2 ? x[2] : 1;
      op.kernel_w = x.size() > 3 ? x[3] : 1;
      op.stride = 1;
    } else {
      const auto kernel = node.ints_attr("kernel_shape");
      if (kernel.empty()) fail(node, "no kernel_shape");
      const Window win = window_of(node, x, kernel);
      op.kernel_h = kernel.front();
      op.kernel_w = kernel.back();
      op.stride = win.strides.back();
      op.pad = win.pads[win.pads.size() / 2 - 1];
    }
    op.output = {node.outputs.at(0), to_shape(require_output(node, node.outputs.at(0), x.size()))};
    push(std::move(op));
  }

  void emit_gather(const Node& node) {
    const auto& data = node.inputs.at(0);
    if (is_parameter(data) && node.int_attr("axis", 0) == 0 && g_.shapes.at(data).size() == 2) {
      Op op = make_op(node, OpKind::embedding);
      if (auto r = ref_if_known(node.inputs.at(1), node)) op.inputs.push_back(*r);
      op.weights.push_back(ref(data, node));
      set_output(op, node, node.outputs.at(0));
      return push(std::move(op));
    }
    emit_copy(node, OpKind::transpose);
  }

  void emit_view(const Node& node) {
    const auto& x = node.inputs.empty() ? std::string() : node.inputs.front();
    for (const auto& out : node.outputs) {
      Op op = make_op(node, OpKind::reshape);
      if (node.outputs.size() > 1) op.name = fmt::format("{}:{}", node.name, out);
      if (!is_constant(x)) {
        if (auto r = ref_if_known(x, node)) op.inputs.push_back(*r);
      }
      set_output(op, node, out);
      push(std::move(op));
    }
  }

  // A copy reads as many elements as it writes: the input is counted with the output's shape
  // (Gather of a few rows, Expand, Pad and Resize read far less or more than their whole input
  // would say).
  void emit_copy(const Node& node, OpKind kind) {
    Op op = make_op(node, kind, kind == OpKind::transpose && node.op_type != "Transpose" ? lower(node.op_type) : "");
    const bool known = set_output(op, node, node.outputs.at(0));
    if (node.op_type == "Transpose") {
      auto perm = node.ints_attr("perm");
      if (perm.empty())  // without perm, the axes reversed
        for (auto a = static_cast<std::int64_t>(op.output.shape.size()) - 1; a >= 0; --a) perm.push_back(a);
      op.fn = transpose_fn(perm);
    }
    if (!node.inputs.empty() && !is_constant(node.inputs[0]) && known) {
      op.inputs.push_back({node.inputs[0], op.output.shape});
    }
    push(std::move(op));
  }

  void emit_concat(const Node& node) {
    Op op = make_op(node, OpKind::concat);
    op.axis = static_cast<int>(node.int_attr("axis", 0));
    for (const auto& t : node.inputs) {
      if (auto r = ref_if_known(t, node)) (is_constant(t) ? op.weights : op.inputs).push_back(*r);
    }
    set_output(op, node, node.outputs.at(0));
    push(std::move(op));
  }

  void emit_unknown(const Node& node) {
    const std::string type = node.domain.empty() ? node.op_type : node.domain + "." + node.op_type;
    ++result_.unknown_ops[type];
    for (std::size_t i = 0; i < node.outputs.size(); ++i) {
      Op op = make_op(node, OpKind::elementwise, "unknown:" + type);
      if (node.outputs.size() > 1) op.name = fmt::format("{}:{}", node.name, node.outputs[i]);
      if (i == 0) {
        for (const auto& t : node.inputs) {
          if (t.empty()) continue;
          if (auto r = ref_if_known(t, node)) (is_parameter(t) ? op.weights : op.inputs).push_back(*r);
        }
      }
      set_output(op, node, node.outputs[i]);
      push(std::move(op));
    }
  }

  void finish() {
    auto& model = result_.model;
    for (const auto& in : g_.inputs) {
      const auto it = g_.shapes.find(in);
      model.forward.inputs.push_back({in, it == g_.shapes.end() ? Shape{} : to_shape(it->second)});
    }
    result_.onnx_nodes = g_.file_nodes;
    result_.batch = g_.batch;
    result_.assumptions = g_.assumptions;
    if (!result_.unknown_ops.empty()) {
      int total = 0;
      for (const auto& entry : result_.unknown_ops) total += entry.second;
      result_.warnings.insert(result_.warnings.begin(),
                              fmt::format("{} node(s) of types the importer does not know, costed as "
                                          "memory-bound on their tensors: {}",
                                          total, count_list(result_.unknown_ops)));
    }
    for (auto& w : g_.warnings) result_.warnings.push_back(w);
    model.kind = "onnx";
    model.description = fmt::format("ONNX opset {}{}: {} nodes -> {} ops ({} constant-folded)",
                                    g_.opset, g_.producer.empty() ? "" : ", from " + g_.producer,
                                    g_.file_nodes, model.forward.ops.size(), folded_);
  }

  ParsedGraph g_;
  const OnnxOptions& options_;
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<int>> consumers_;  // -1: a graph output
  std::vector<bool> done_;
  std::set<std::string> constants_;
  std::map<int, std::string> output_alias_;  // node -> tensor its fused op writes
  std::map<int, std::string> bias_;          // node -> bias folded into it
  std::map<std::string, std::string> transposed_source_;
  std::map<int, Region> regions_;            // last node of a region -> the region
  std::map<int, int> representative_;        // region member -> the region's last node
  std::map<std::string, std::size_t> op_writing_;  // tensor -> index of the op that writes it
  std::set<std::string> unshaped_;
  int folded_ = 0;
  int region_count_ = 0;
  OnnxImport result_;
};

}  // namespace

bool is_unary_elementwise(const std::string& op_type) { return unary_ops().count(op_type) > 0; }
bool is_binary_elementwise(const std::string& op_type) { return binary_ops().count(op_type) > 0; }

OnnxImport map_onnx(ParsedGraph graph, const OnnxOptions& options) {
  Mapper mapper(std::move(graph), options);
  return mapper.run();
}

}  // namespace truepeak::estimate::onnx_detail
