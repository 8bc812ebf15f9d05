// Problems are values that print and parse: a canonical string names each one in logs, profiles
// and tests. FLOPs and bytes are declared here once; rates are derived from them, nowhere else.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"

namespace truepeak {

// C[batch][m][n] = A[batch][m][k] * B[batch][k][n]. How B is stored is the backend's to say
// (Kernel::layout): both take it as a linear layer's weights, B^T = W[batch][n][k].
// For int8 the output is int32; for the floating types it is the input type.
struct GemmShape {
  DType dtype = DType::f32;
  std::int64_t m = 0, n = 0, k = 0, batch = 1;

  double flops() const;  // 2 * batch * m * n * k
  double bytes() const;  // A and B read once, C written once
  double weight_bytes() const;  // B, the weights of a layer's product
  // "bf16_b1m64n4096k4096"
  std::string str() const;
  static GemmShape parse(const std::string& text);  // throws InputError
  friend bool operator==(const GemmShape&, const GemmShape&) = default;
};

// Forward 2-D convolution, benchdnn-style naming:
// "f32_g1mb1ic64ih56iw56oc64kh3kw3sh1sw1ph1pw1dh1dw1" (square stride/pad/dilation here, so the
// shorter form "f32_g1mb1ic64ih56oc64kh3sh1ph1dh1" is what str() prints and parse() reads).
struct ConvShape {
  DType dtype = DType::f32;
  std::int64_t n = 1;   // batch
  std::int64_t c = 0;   // input channels
  std::int64_t h = 0, w = 0;  // input height and width
  std::int64_t k = 0;   // output channels
  std::int64_t r = 0, s = 0;  // filter height and width
  std::int64_t stride = 1, pad = 0, dilation = 1, groups = 1;

  std::int64_t out_h() const;
  std::int64_t out_w() const;
  double flops() const;  // 2 * n * k * out_h * out_w * (c / groups) * r * s
  // Of the filter taps that flops() counts, the share that falls on the input rather than on the
  // padding (1 without padding). oneDNN skips the others, so a small padded layer can run above
  // the FMA peak in counted FLOP/s.
  double inside_tap_share() const;
  double bytes() const;  // input, weights read once, output written once
  double weight_bytes() const;
  std::string str() const;
  static ConvShape parse(const std::string& text);  // throws InputError
  friend bool operator==(const ConvShape&, const ConvShape&) = default;
};

// An elementwise, softmax or layer-norm op over rows x cols elements, e.g. "gelu_bf16_256x1024".
// Softmax and layernorm reduce along each row of `cols`; the others treat it as a flat tensor
// (add sums two of them).
struct VectorOpShape {
  std::string op;  // one of vector_op_names()
  DType dtype = DType::f32;
  std::int64_t rows = 0, cols = 0;

  double elements() const { return static_cast<double>(rows) * static_cast<double>(cols); }
  // Bytes read and written once: the inputs and the output (an add reads two tensors, every
  // other op one).
  double bytes() const;
  std::string str() const;
  friend bool operator==(const VectorOpShape&, const VectorOpShape&) = default;
};
// relu, relu6, gelu (erf form), gelu_tanh (tanh form), tanh, sigmoid, silu, exp, add (of two
// tensors), add_padded (of two channel-blocked tensors of `rows` channels by `cols` positions,
// `rows` not a multiple of the channel block: the last block part-filled), softmax, layernorm;
// reorder_blocked and reorder_plain: a layout change of a tensor of `rows` channels by `cols`
// positions, from plain (channels outermost) to channel-blocked (a block of channels innermost,
// oneDNN's aBcd16b or aBcd8b) and back. `rows` of a reorder is a multiple of the block.
const std::vector<std::string>& vector_op_names();
// Channels in a block of oneDNN's channel-blocked activation layout (nChw16c, nChw8c) on a CPU
// where oneDNN's effective ISA is `onednn_isa` (as a profile's `onednn_isa` names it): 16 with
// AVX-512, else 8.
std::int64_t onednn_channel_block(std::string_view onednn_isa);
// The size a calibration measures `op` at: 256 x 1024 (256K elements, 1 MiB a tensor in f32);
// add_padded one and a half blocks of channels (24 in blocks of 16, 12 in blocks of 8, the last
// half full) by 10240 positions.
VectorOpShape calibration_shape(const std::string& op, DType dtype, std::int64_t channel_block = 16);

// STREAM kernels over arrays of doubles (CPU) or the backend's element type. `update` is the
// in-place form: a[i] = -a[i], each line read and written back, as a runtime's in-place
// activation (ReLU over a convolution's output) moves it.
enum class StreamOp { copy, scale, add, triad, update };
std::string_view to_string(StreamOp op);
// Number of arrays per element, the working set: copy/scale 2, add/triad 3, update 1.
int stream_arrays(StreamOp op);
// Bytes moved per byte of working set: 2 for update (read, then written back), else 1.
int stream_passes(StreamOp op);

// Host<->device copies.
enum class TransferDir { h2d, d2h };
std::string_view to_string(TransferDir dir);

}  // namespace truepeak
