// The core clock a CPU actually runs at, measured: on a VM /proc/cpuinfo shows only the nominal
// clock and cpufreq is absent, while the cores boost well above it.
#pragma once

#include <memory>
#include <optional>

#include "core/backend.hpp"

namespace truepeak::cpu {

// Times a chain of dependent integer adds (one cycle each on every x86-64 and AArch64 core) on
// `threads` threads at once and returns the fastest thread's clock in MHz, best of a few short
// trials (another tenant can only slow a trial down). About 0.1 s. nullopt on other ISAs or when
// the chain's result does not check out.
std::optional<double> measure_clock_mhz(int threads);

// The same chain as a Kernel, timed like the others (the peak watch times it all through a
// calibration, since the boost clock comes and goes): each run is one chain of about 3 ms on
// every thread at once; flops() is the adds of one thread, so the rate is the clock of the
// slowest thread in Hz. Unsupported on other ISAs.
std::unique_ptr<Kernel> make_clock_kernel(int threads);

// The clock implied by `adds` dependent adds taking `seconds`, in MHz.
double clock_mhz_from_chain(double adds, double seconds);

}  // namespace truepeak::cpu
