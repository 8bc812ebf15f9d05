// Theoretical / datasheet figures of a device, with the source of each. A derived figure can sit
// below the measured one (turbo clocks, a VM showing only the base clock): both are recorded and
// never clamped.
#pragma once

#include "core/backend.hpp"
#include "core/profile.hpp"

namespace truepeak {

// From ISA (FMA width, ports, AMX tiles), cores and clock, as read by the CPU backend into
// DeviceDescription::properties.
Datasheet cpu_datasheet(const DeviceDescription& device);
// From a table of known GPUs, else an estimate from SMs x clock x per-SM rates of the compute
// capability, labelled as such in `source`.
Datasheet gpu_datasheet(const DeviceDescription& device);

}  // namespace truepeak
