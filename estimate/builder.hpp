// Makers for each op kind: they derive the output shape and the parameter tensors from the
// inputs and attributes, so the JSON loader (which checks a file's shapes against them) and the
// transformer shorthand build ops the same way. Each throws InputError with the reason (the
// caller adds file and op).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "estimate/graph.hpp"

namespace truepeak::estimate {

struct ConvAttrs {
  std::int64_t kernel_h = 1, kernel_w = 1, stride = 1, pad = 0, dilation = 1, groups = 1;
};

// weight_name empty: "<name>.weight"; bias "<name>.bias".
Op make_linear(const std::string& name, const TensorRef& x, const Dim& out_features, bool bias,
               const std::string& weight_name = "");
Op make_matmul(const std::string& name, const TensorRef& a, const TensorRef& b, bool transpose_a,
               bool transpose_b);
Op make_conv2d(const std::string& name, const TensorRef& x, const Dim& out_channels,
               const ConvAttrs& attrs, bool bias);
// q [B, H, Sq, D]; k, v [B, Hkv, Skv, D] (H a multiple of Hkv). With a cache, k and v are the
// new token's keys/values and the cache tensors (same layout, Skv = context) are the state read.
Op make_attention(const std::string& name, const TensorRef& q, const TensorRef& k,
                  const TensorRef& v, bool causal, const std::vector<TensorRef>& cache = {});
// Unary (relu, gelu, silu, ...) or n-ary with broadcasting (add, mul): the output has the shape
// of the largest input. `params` are parameter operands (a learned position table, a scale).
Op make_elementwise(const std::string& name, const std::string& fn,
                    const std::vector<TensorRef>& inputs,
                    const std::vector<TensorRef>& params = {});
// batchnorm (channels on axis 1), layernorm, rmsnorm (last axis); affine parameters included.
Op make_norm(const std::string& name, const std::string& fn, const TensorRef& x,
             bool affine = true);
Op make_softmax(const std::string& name, const TensorRef& x);
// fn "max" or "avg", NCHW; kernel 0 = global, whose fn becomes "global_max" / "global_avg" (a
// kind of its own: runtimes run it as a reduction).
Op make_pool(const std::string& name, const std::string& fn, const TensorRef& x,
             const ConvAttrs& attrs);
Op make_embedding(const std::string& name, const TensorRef& ids, const Dim& vocab, const Dim& dim,
                  const std::string& weight_name = "");
Op make_reshape(const std::string& name, const TensorRef& x, const Shape& shape);
// A view of part of a tensor (the class token of a sequence): free, like a reshape.
Op make_slice(const std::string& name, const TensorRef& x, const Shape& shape);
// A transpose that moves the innermost axis ("inner": each output row gathers elements a row of
// the input apart, as a key's [heads, 64, tokens] copy does) or keeps it ("": whole rows move,
// as splitting heads apart does); runtimes copy the first several times slower per element.
Op make_transpose(const std::string& name, const TensorRef& x, const std::vector<int>& perm);
std::string transpose_fn(const std::vector<std::int64_t>& perm);
// Inputs and parameter operands (a class token) joined along `axis`.
Op make_concat(const std::string& name, const std::vector<TensorRef>& inputs, int axis,
               const std::vector<TensorRef>& params = {});

// Symbolic equality of element counts (coefficients and symbols).
bool same_elements(const Shape& a, const Shape& b);

// Records tensors as ops are added, so later ops can refer to earlier outputs by name.
class GraphBuilder {
 public:
  const TensorRef& input(const std::string& name, const Shape& shape);
  // Adds the op and returns its output.
  const TensorRef& add(Op op);
  // nullptr when no input or earlier op wrote `name`.
  const TensorRef* find(const std::string& name) const;
  Graph take() { return std::move(graph_); }
  const Graph& graph() const { return graph_; }

 private:
  Graph graph_;
  std::map<std::string, TensorRef> tensors_;  // node-based: references stay valid
};

}  // namespace truepeak::estimate
