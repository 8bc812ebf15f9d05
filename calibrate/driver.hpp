// The calibrate driver: for each selected device, runs its Plan through the runner, checks every
// kernel's output before trusting its time, watches a sentinel for interference, fits the
// results and assembles the profile.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/plan.hpp"
#include "core/profile.hpp"

namespace truepeak {

struct CalibrateOptions {
  std::vector<std::string> device_ids;  // from select_devices()
  Suite suite = Suite::full;
  int threads = 0;  // CPU threads; 0 = all cores
  std::string label;
  std::optional<double> price_per_hour_usd;
  std::vector<std::string> argv;
  // Raised (e.g. by SIGINT) to stop early: the current point ends with the samples it has, and
  // the profile comes back with complete = false.
  const std::atomic<bool>* stop = nullptr;
  // One line per event, for stderr. May be empty.
  std::function<void(const std::string&)> progress;
};

Profile run_calibration(const CalibrateOptions& options);

// Measures one device with the given backend and plan into `device` (whose id, name, datasheet,
// ... the caller fills). Returns false when the stop flag ended it early.
bool calibrate_device(Backend& backend, const Plan& plan, const CalibrateOptions& options, Device& device,
                      int position = 1, int device_count = 1);

}  // namespace truepeak
