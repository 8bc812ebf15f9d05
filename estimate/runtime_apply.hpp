// `estimate --runtime KEY`: the figures of a runtime record (calibrate --runtime) as estimator
// Options and as a view of the device the runtime ran on (docs/runtimes.md, "The estimate").
#pragma once

#include <string>
#include <vector>

#include "core/profile.hpp"
#include "estimate/estimator.hpp"
#include "estimate/onnx_import.hpp"

namespace truepeak::estimate {

// The record `key` of `device`. Throws InputError naming the keys the device has and the
// command that adds the missing one to `profile_file`.
const RuntimeRecord& find_runtime(const Device& device, const std::string& key,
                                  const std::string& profile_file);

// The device as the runtime sees it: each memory level the record measured (by name) at the
// record's bandwidth, the others as they are; for each dtype the record has GEMM (convolution)
// points of, its points in place of the device's, and for GEMM its best point as the dtype's peak.
Device runtime_device(const Device& device, const RuntimeRecord& record);

// Sets from the record, for options.dtype: op_overhead_s (op_s), kind_overheads (kind_op_s of
// that dtype or of every dtype; a dtype's own entry wins), own_rates (own_kernels of that dtype),
// blocked_layout (layout), conv_layout, linears_as_convolutions, in_place_ops (in_place), fusion
// (fusion; unset where the record has none), conv_dispatch (likewise).
// Returns notes for the user (a dtype the runtime was not calibrated for).
std::vector<std::string> apply_runtime(const RuntimeRecord& record, const std::string& key,
                                       Options& options);

// What the runtime folds of an ONNX graph as it runs it: its activations into products
// (fuse_activations), a convolution's batch norm unless it runs it apart (conv_batchnorm_apart).
ImportRules import_rules(const RuntimeRecord& record);

// `base` with each kind of `given` set to its value there (added where `base` lacks it).
void override_rates(OwnRates& base, const OwnRates& given);

}  // namespace truepeak::estimate
