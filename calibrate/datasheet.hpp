// Theoretical / datasheet figures of a device, with the source of each. A derived figure can sit
// below the measured one (turbo clocks, a VM showing only the base clock): both are recorded and
// never clamped.
#pragma once

#include <optional>
#include <string>

#include "core/backend.hpp"
#include "core/profile.hpp"

namespace truepeak {

// From ISA (FMA width, ports, AMX tiles), cores and clock, as read by the CPU backend into
// DeviceDescription::properties. The source line names the rule it follows ("cpu rule N").
Datasheet cpu_datasheet(const DeviceDescription& device);
// From a table of known GPUs, else an estimate from SMs x clock x per-SM rates of the compute
// capability, labelled as such in `source`.
Datasheet gpu_datasheet(const DeviceDescription& device);

// The rule cpu_datasheet follows. Rule 1 (sources without a rule number) counted AMX's
// multiply-adds twice and gave Intel's AVX512_BF16 twice the f32 rate; rule 2 takes every
// per-cycle rate from the vendors' documents.
inline constexpr int kCpuDatasheetRule = 2;
// The rule a CPU datasheet's source names; 1 when it names none (written before rules had
// numbers).
int cpu_datasheet_rule(const std::string& source);
// For a CPU device of a stored profile whose datasheet came from an older rule: the datasheet
// derived again from the properties the profile keeps (cores, clocks, ISA flags, vendor, family,
// name), its source saying so. std::nullopt for other devices and for current datasheets.
std::optional<Datasheet> rederived_cpu_datasheet(const Device& device);

}  // namespace truepeak
