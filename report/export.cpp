#include "report/export.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/read_file.hpp"
#include "report/summary.hpp"

namespace truepeak::report {

ExportFormat parse_export_format(const std::string& name) {
  if (name == "llm-analysis") return ExportFormat::llm_analysis;
  if (name == "calculon") return ExportFormat::calculon;
  if (name == "csv") return ExportFormat::csv;
  if (name == "prometheus") return ExportFormat::prometheus;
  throw InputError(fmt::format(
      "--to '{}': unknown export format (use llm-analysis, calculon, csv or prometheus)", name));
}

std::optional<HostLink> measured_host_link(const Device& device) {
  const auto h2d = device.transfers.find("h2d_pinned");
  const auto d2h = device.transfers.find("d2h_pinned");
  if (h2d == device.transfers.end() || d2h == device.transfers.end()) return std::nullopt;
  const auto& up = h2d->second;
  const auto& down = d2h->second;
  if (!up.Bps || !down.Bps || !up.latency_s || !down.latency_s) return std::nullopt;
  return HostLink{std::min(*up.Bps, *down.Bps), *up.latency_s + *down.latency_s};
}

ExportResult export_profile(const Profile& profile, ExportFormat format,
                            const std::string& device_id, const std::string& where,
                            const ExportOptions& options) {
  if (!options.network_file.empty() && format != ExportFormat::calculon)
    throw InputError("--network: only the calculon export takes a network block");
  switch (format) {
    case ExportFormat::llm_analysis:
      return export_llm_analysis(profile, pick_device(profile, device_id, where));
    case ExportFormat::calculon: {
      const auto& device = pick_device(profile, device_id, where);
      if (options.network_file.empty()) return export_calculon(profile, device);
      const auto networks = parse_calculon_networks(
          read_json_file(options.network_file, kMaxProfileBytes, "network block"),
          options.network_file);
      return export_calculon(profile, device, &networks);
    }
    case ExportFormat::csv:
    case ExportFormat::prometheus: {
      std::vector<const Device*> devices;
      if (device_id.empty()) {
        for (const auto& d : profile.devices) devices.push_back(&d);
      } else {
        devices.push_back(&pick_device(profile, device_id, where));
      }
      return format == ExportFormat::csv ? export_csv(profile, devices)
                                         : export_prometheus(profile, devices);
    }
  }
  throw Error("unreachable export format");
}

}  // namespace truepeak::report
