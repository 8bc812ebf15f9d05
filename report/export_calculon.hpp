// The parts of the Calculon export that stand on their own: the GEMM efficiency curve and the
// networks. Calculon's formats: its README and calculon/{system,processor,memory,network}.py.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "core/profile.hpp"

namespace truepeak::report::calculon {

// Whether m, n and k each span a whole number of 16-byte units in the shape's dtype (8 elements
// of a 16-bit type, 16 of an 8-bit one): the alignment tensor-core GEMM kernels need to run at
// their rate. Other shapes run in slower kernels, and their rate says nothing of their FLOP count.
bool aligned(const GemmShape& shape);

// Calculon's matrix lookup, [[GFLOP, efficiency], ...]: the first entry whose threshold is <= an
// op's GFLOP applies. Thresholds strictly decrease to 0; efficiencies lie in (0, 1].
using Curve = std::vector<std::pair<double, double>>;

// The curve of one dtype's GEMM points over `peak` (FLOP/s): from the aligned, warm-weight points,
// the fastest at each FLOP count; at each measured size, the best rate measured at that size or
// below (no size slower than a smaller one); a step between neighbouring measured sizes larger
// than kMaxCurveStep filled with entries interpolated in log(size)-log(rate), each taking the rate
// at its own threshold, the lower end of the sizes it covers. Entries that repeat the one below
// are dropped, and the smallest measured size is moved to 0. Empty when no point qualifies.
// docs/exports.md explains the choice.
inline constexpr double kMaxCurveStep = 1.25;
Curve gemm_curve(const std::vector<GemmPoint>& points, DType dtype, double peak);

// The efficiency Calculon reads from `curve` for an op of `gflop`; nullopt when no entry covers it.
std::optional<double> lookup(const Curve& curve, double gflop);

// A network over the host link the profile measured (measured_host_link), sized to the profile's
// GPUs; nullopt when the link was not measured.
std::optional<nlohmann::ordered_json> host_link_network(const Profile& profile,
                                                        const Device& device);
// One network of one processor: Calculon runs a one-GPU execution over it, and refuses any
// execution that would use it.
nlohmann::ordered_json placeholder_network();

}  // namespace truepeak::report::calculon
