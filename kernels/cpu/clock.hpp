// The core clock a CPU actually runs at, measured: on a VM /proc/cpuinfo shows only the nominal
// clock and cpufreq is absent, while the cores boost well above it.
#pragma once

#include <memory>

#include "core/backend.hpp"

namespace truepeak::cpu {

// A chain of dependent integer adds (one cycle each on every x86-64 and AArch64 core) as a
// Kernel, timed like the others (the peak watch times it all through a calibration, since the
// boost clock comes and goes): each run is one chain of under 1 ms on every thread at once;
// flops() is the adds of one thread and run_s() the fastest thread's time, so the rate is that
// thread's clock in Hz. check() verifies every thread's sum. Unsupported on other ISAs.
std::unique_ptr<Kernel> make_clock_kernel(int threads);

}  // namespace truepeak::cpu
