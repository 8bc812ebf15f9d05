// Helpers shared by the per-device plans (plan_cpu.cpp, plan_gpu.cpp): building a conv shape from
// a layer's usual parameters, a stopping rule from its budget, and the generic convolution grid
// that both plans draw their layers from (docs/calibration-grid.md).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/stats.hpp"

namespace truepeak::plan_detail {

// A square-image, square-filter conv layer with no dilation.
inline ConvShape conv(DType dtype, std::int64_t n, std::int64_t c, std::int64_t hw, std::int64_t k,
                      std::int64_t rs, std::int64_t stride, std::int64_t pad,
                      std::int64_t groups = 1) {
  ConvShape shape;
  shape.dtype = dtype;
  shape.n = n;
  shape.c = c;
  shape.h = hw;
  shape.w = hw;
  shape.k = k;
  shape.r = rs;
  shape.s = rs;
  shape.stride = stride;
  shape.pad = pad;
  shape.dilation = 1;
  shape.groups = groups;
  return shape;
}

inline StopRule rule(int min_samples, double budget_s, int stable_window, int warmup_runs = 2,
                     double warmup_s = 0.02) {
  StopRule r;
  r.min_samples = min_samples;
  r.budget_s = budget_s;
  r.stable_window = stable_window;
  r.target_cv = 0.01;
  r.min_rel_gain = 0.005;
  r.warmup_runs = warmup_runs;
  r.warmup_s = warmup_s;
  return r;
}

// The generic convolution grid. The estimator looks a convolution up by its implicit-GEMM shape
// (groups, output positions, output channels a group, inputs a group times the window; the
// stride apart) in log2 space, so the grid spreads its layers over those axes rather than
// following any one network. A layer sits on a cell (u, v): an input of kGridSpatial[u] squared
// positions and kGridChannels[v] channels, both ladders of powers of two. Its line u + v is the
// log2 of spatial size times channels over 7 x 16: how wide the layer is for its position in a
// network, where the image halves as the channels double. Each family (a kernel, a stride, how
// the channels change) takes the cells of a few lines whose (u - v) mod 4 is one of its phases.
// A line of even u + v holds phases 0 and 2, an odd one 1 and 3; a phase is every other cell of a
// line, shifted by one cell from a line to the next of its parity. So a family's layers spread
// over the spatial sizes and channel counts alike, and families on the same lines interleave
// instead of repeating each other's cells.
inline constexpr std::array<std::int64_t, 5> kGridSpatial = {7, 14, 28, 56, 112};
inline constexpr std::array<std::int64_t, 8> kGridChannels = {16,  32,  64,   128,
                                                              256, 512, 1024, 2048};

// How a family's output channels follow its input channels: the same; four times as many for a
// layer of up to 128 channels and a quarter for a wider one (a 1x1 that widens a narrow layer or
// narrows a wide one); twice as many (a strided layer that starts a stage).
enum class GridOut { same, four_fold, doubled };

struct ConvFamily {
  std::string name;  // "3x3/2", "dw5x5": for tests and messages
  std::int64_t kernel = 1;
  std::int64_t stride = 1;
  bool depthwise = false;
  GridOut out = GridOut::same;
  std::vector<int> lines;
  std::vector<int> phases;
  // A main family (the 1x1s, 3x3s, strided 3x3s and depthwise 3x3s, which most networks spend
  // most of their time in) lends its middle line to the GPU's shorter grid.
  bool main = false;
};

// Dense layers on lines 3 to 7 (896 to 14336 for spatial size times channels), depthwise ones on
// lines 4 to 7. 1x1 layers on the even lines, 3x3, 5x5 and strided ones on the odd: in
// implicit-GEMM terms a 3x3 over c channels reads 9c inputs a position, between the 1x1s of the
// lines around it. Strided layers start at 14x14, so that their output is at least 7x7.
inline const std::vector<ConvFamily>& conv_families() {
  static const std::vector<ConvFamily> families = {
      {"1x1", 1, 1, false, GridOut::same, {4, 6}, {0}, true},
      {"1x1x4", 1, 1, false, GridOut::four_fold, {4, 6}, {2}, true},
      {"3x3", 3, 1, false, GridOut::same, {3, 5, 7}, {1}, true},
      {"3x3/2", 3, 2, false, GridOut::doubled, {5}, {3}, true},
      {"1x1/2", 1, 2, false, GridOut::doubled, {5}, {1}, false},
      {"5x5", 5, 1, false, GridOut::same, {3}, {3}, false},
      {"dw3x3", 3, 1, true, GridOut::same, {6}, {0, 2}, true},
      {"dw5x5", 5, 1, true, GridOut::same, {5}, {3}, false},
      {"dw3x3/2", 3, 2, true, GridOut::same, {5}, {1}, false},
      {"dw5x5/2", 5, 2, true, GridOut::same, {4}, {0}, false},
      {"dw7x7", 7, 1, true, GridOut::same, {7}, {1}, false},
  };
  return families;
}

struct GridCell {
  int u = 0, v = 0;
};

// The family's cells on `line`, largest spatial size first.
inline std::vector<GridCell> grid_cells(const ConvFamily& family, int line) {
  std::vector<GridCell> cells;
  const int min_u = family.stride > 1 ? 1 : 0;
  for (int u = static_cast<int>(kGridSpatial.size()) - 1; u >= min_u; --u) {
    const int v = line - u;
    if (v < 0 || v >= static_cast<int>(kGridChannels.size())) continue;
    const int phase = ((u - v) % 4 + 4) % 4;
    if (std::find(family.phases.begin(), family.phases.end(), phase) != family.phases.end())
      cells.push_back({u, v});
  }
  return cells;
}

inline ConvShape grid_layer(DType dtype, const ConvFamily& family, GridCell cell,
                            std::int64_t batch = 1) {
  const std::int64_t c = kGridChannels[static_cast<std::size_t>(cell.v)];
  std::int64_t k = c;
  if (family.out == GridOut::four_fold) k = c <= 128 ? 4 * c : c / 4;
  if (family.out == GridOut::doubled) k = std::min(2 * c, kGridChannels.back());
  return conv(dtype, batch, c, kGridSpatial[static_cast<std::size_t>(cell.u)], k, family.kernel,
              family.stride, family.kernel / 2, family.depthwise ? c : 1);
}

// The family's layers on `line`, largest spatial size first.
inline std::vector<ConvShape> grid_line_layers(DType dtype, const ConvFamily& family, int line) {
  std::vector<ConvShape> layers;
  for (const auto cell : grid_cells(family, line))
    layers.push_back(grid_layer(dtype, family, cell));
  return layers;
}

// The family's middle line (the lower of two).
inline int grid_middle_line(const ConvFamily& family) {
  return family.lines[(family.lines.size() - 1) / 2];
}

// Every layer of the family, line by line.
inline std::vector<ConvShape> grid_layers(DType dtype, const ConvFamily& family) {
  std::vector<ConvShape> layers;
  for (const int line : family.lines) {
    const auto more = grid_line_layers(dtype, family, line);
    layers.insert(layers.end(), more.begin(), more.end());
  }
  return layers;
}

// The family's representative: the layer in the middle of its middle line's cells.
inline ConvShape grid_representative(DType dtype, const ConvFamily& family) {
  const auto cells = grid_cells(family, grid_middle_line(family));
  return grid_layer(dtype, family, cells[cells.size() / 2]);
}

// The family's layer of the largest spatial size on its middle line: at a larger batch, the one
// that reaches the most output positions.
inline ConvShape grid_largest(DType dtype, const ConvFamily& family) {
  return grid_layer(dtype, family, grid_cells(family, grid_middle_line(family)).front());
}

// Every network's first layer reads the image itself: 3 channels at 224x224, here into 32
// channels through a 3x3 and into 64 through a 7x7, both of stride 2.
inline std::vector<ConvShape> image_stems(DType dtype) {
  return {conv(dtype, 1, 3, 224, 32, 3, 2, 1), conv(dtype, 1, 3, 224, 64, 7, 2, 3)};
}

}  // namespace truepeak::plan_detail
