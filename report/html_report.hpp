// `truepeak report`: one self-contained HTML file (inline CSS and SVG, nothing fetched) with the
// machines, the summary of measured figures against the datasheet, and four kinds of plot:
// roofline, GEMM efficiency against size, bandwidth against working set, transfer bandwidth.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/profile.hpp"
#include "report/summary.hpp"
#include "report/svg_chart.hpp"

namespace truepeak::report {

// Measured ceilings (solid) and datasheet ones (dashed) per dtype, GEMM (circles) and conv
// (triangles) points at their arithmetic intensity (FLOPs / minimal bytes).
Chart roofline_chart(const DeviceView& view);
// Each GEMM point's rate over the datasheet peak of its dtype (over the best measured rate when
// the device has no datasheet figure), against the problem's FLOPs.
Chart gemm_efficiency_chart(const std::vector<DeviceView>& views);
// Memory sweep: bandwidth against working-set size per kernel; the datasheet figure dashed.
Chart bandwidth_chart(const std::vector<DeviceView>& views);
// Host-device transfers: bytes / time per point, the latency+bandwidth fit dashed. nullopt when
// no device has transfers.
std::optional<Chart> transfer_chart(const std::vector<DeviceView>& views);

// `sources` names each profile (its path) in the page.
std::string render_report_html(const std::vector<Profile>& profiles,
                               const std::vector<std::string>& sources);

}  // namespace truepeak::report
