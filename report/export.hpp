// The measured figures in the formats other tools read. Values that were not measured are left
// out or written as null where the target allows it; none is made up. Every exporter returns the
// text to write and notes for the user (what to pass beside the file, what was left out).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/profile.hpp"

namespace truepeak::report {

enum class ExportFormat { llm_analysis, calculon, csv, prometheus };

// "llm-analysis", "calculon", "csv", "prometheus". Throws InputError listing the valid names.
ExportFormat parse_export_format(const std::string& name);

struct ExportResult {
  std::string text;
  std::vector<std::string> notes;  // one line each
};

// The host link as measured (pinned copies both ways). Data between two GPUs without a faster
// link is staged through host memory: the slower direction's bandwidth and both latencies.
// nullopt when either direction lacks a figure.
struct HostLink {
  double Bps = 0;
  double latency_s = 0;
};
std::optional<HostLink> measured_host_link(const Device& device);

// llm-analysis GPU config (llm_analysis/gpu_configs/*.json): peaks from the datasheet in the
// units llm-analysis reads, the host link as the intra-node link where it was measured; the notes
// hold the measured efficiencies per GEMM dtype and what the format cannot carry.
ExportResult export_llm_analysis(const Profile& profile, const Device& device);
// Calculon system (systems/*.json): matrix/vector tflops with gflops_efficiency tables from the
// GEMM points, mem1 with MB_efficiency from the memory sweep, mem2 from host transfers (GPUs).
ExportResult export_calculon(const Profile& profile, const Device& device);
// One row per measured point (gemm, conv, memory sweep, transfer) of the given devices.
ExportResult export_csv(const Profile& profile, const std::vector<const Device*>& devices);
// Prometheus text exposition format 0.0.4 (node-exporter textfile collector).
ExportResult export_prometheus(const Profile& profile, const std::vector<const Device*>& devices);

// Dispatch: the single-device formats take `device_id` (empty: the first GPU, else the first
// device); csv and prometheus take all devices unless one is named. `where` names the profile
// in errors.
ExportResult export_profile(const Profile& profile, ExportFormat format,
                            const std::string& device_id, const std::string& where);

}  // namespace truepeak::report
