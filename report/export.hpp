// The measured figures in the formats other tools read. Values that were not measured are left
// out, so that the target's own defaults hold; none is made up, and a figure that stands in for
// one not measured is named as such in the file and in a warning. Every exporter returns the text
// to write, notes for the user (what to pass beside the file, what was left out) and warnings.
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
  std::vector<std::string> notes;     // one line each
  std::vector<std::string> warnings;  // one line each: what the file holds that was not measured
};

// What a format takes beside the profile.
struct ExportOptions {
  // Calculon: a file holding the user's networks (one network object, a list of them, or a
  // system file's {"networks": [...]}), written in place of the measured ones. Empty: none.
  std::string network_file;
};

// A Calculon network block as the user gave it, checked as Calculon checks it on load. `where`
// names its source in errors (InputError).
struct CalculonNetworks {
  nlohmann::ordered_json networks;  // a non-empty array
  std::string where;
};
CalculonNetworks parse_calculon_networks(const nlohmann::json& block, const std::string& where);

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
// Calculon system (systems/*.json): matrix tflops with a gflops_efficiency curve from the aligned
// GEMM points of each dtype, vector from the FMA peaks, mem1 from the memory sweep, mem2 from the
// host transfers (GPUs), networks from `networks` when given, else from the measured host link,
// else a placeholder (with a warning).
ExportResult export_calculon(const Profile& profile, const Device& device,
                             const CalculonNetworks* networks = nullptr);
// One row per measured point (gemm, conv, vector op, memory sweep, transfer) of the given
// devices, every dimension and attribute in a column of its own.
ExportResult export_csv(const Profile& profile, const std::vector<const Device*>& devices);
// Prometheus text exposition format 0.0.4 (node-exporter textfile collector).
ExportResult export_prometheus(const Profile& profile, const std::vector<const Device*>& devices);

// Dispatch: the single-device formats take `device_id` (empty: the first GPU, else the first
// device); csv and prometheus take all devices unless one is named. `where` names the profile
// in errors. An option given to a format that does not take it is an InputError.
ExportResult export_profile(const Profile& profile, ExportFormat format,
                            const std::string& device_id, const std::string& where,
                            const ExportOptions& options = {});

}  // namespace truepeak::report
