// `truepeak calibrate`: measure this machine's devices into a profile.
#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <unistd.h>

#include <fmt/format.h>

#include "calibrate/backends.hpp"
#include "calibrate/driver.hpp"
#include "calibrate/machine.hpp"
#include "calibrate/summary.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"

namespace truepeak::cli {
namespace {

// Raised by the first Ctrl-C. A signal handler can only reach static storage; the handler is
// reset after the first signal, so a second Ctrl-C ends the process at once.
std::atomic<bool> g_stop_requested{false};

extern "C" void on_interrupt(int) { g_stop_requested.store(true); }

struct CalibrateArgs {
  std::string device = "all";
  bool quick = false;
  std::string label;
  std::string out;
  std::optional<double> price_per_hour;
  int threads = 0;
};

// Fails before any measuring when the output cannot be written.
void check_writable(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw InputError(fmt::format("--out {}: directory '{}' does not exist", path, dir.string()));
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    throw InputError(fmt::format("--out {}: directory '{}' is not writable", path, dir.string()));
  }
  if (fs::is_directory(p, ec)) throw InputError(fmt::format("--out {}: is a directory, expected a file name", path));
}

void run(const CalibrateArgs& args, const Context& context) {
  if (args.threads < 0) throw InputError(fmt::format("--threads {}: must be 0 (all cores) or more", args.threads));
  if (args.price_per_hour && *args.price_per_hour < 0) {
    throw InputError(fmt::format("--price-per-hour {}: must not be negative", *args.price_per_hour));
  }
  const auto selection = select_devices(args.device);
  CalibrateOptions options;
  options.device_ids = selection.ids;
  options.suite = args.quick ? Suite::quick : Suite::full;
  options.threads = args.threads;
  options.label = args.label.empty() ? read_machine("").label : args.label;
  options.price_per_hour_usd = args.price_per_hour;
  options.argv = context.argv;
  options.stop = &g_stop_requested;
  options.progress = [](const std::string& line) { std::cerr << line << std::endl; };
  const auto out = args.out.empty() ? fmt::format("results/{}.json", options.label) : args.out;
  if (args.out.empty()) {
    // The default place is truepeak's own: make it. A directory named with --out must exist.
    std::error_code ec;
    std::filesystem::create_directories("results", ec);
  }
  check_writable(out);
  for (const auto& note : selection.notes) std::cerr << "truepeak: " << note << "\n";

  struct sigaction action {};
  action.sa_handler = on_interrupt;
  action.sa_flags = SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  const auto profile = run_calibration(options);
  write_profile(out, profile);
  std::cout << profile_summary(profile);
  if (profile.complete) {
    std::cerr << fmt::format("truepeak: wrote {}\n", out);
  } else {
    std::cerr << fmt::format("truepeak: interrupted: wrote what was measured to {} (\"complete\": false)\n", out);
  }
}

}  // namespace

void add_calibrate_command(CLI::App& app, const Context& context) {
  auto args = std::make_shared<CalibrateArgs>();
  auto* cmd = app.add_subcommand("calibrate", "Measure this machine's devices and write a calibrated profile (JSON)");
  cmd->add_option("--device", args->device, "Devices to calibrate: cpu, cuda:N, or all (the CPU and every GPU)")
      ->capture_default_str();
  cmd->add_flag("--quick", args->quick, "Short suite (about 30 s on a 2-core CPU): fewer shapes and samples");
  cmd->add_option("--label", args->label, "Name of this machine in the profile (default: the host name)");
  cmd->add_option("--out", args->out, "Profile file to write (default: results/<label>.json)");
  cmd->add_option("--price-per-hour", args->price_per_hour, "Price of this machine in USD per hour, for cost comparisons");
  cmd->add_option("--threads", args->threads, "CPU threads (0: all cores)")->capture_default_str();
  cmd->footer(
      "The default suite takes about 3 minutes on a 2-core CPU. On the CPU both suites aim to end by a\n"
      "time goal (170 s, --quick 27 s): on a busy host the optional second looks and re-measures give\n"
      "way to it, and the profile's conditions say what was left out.\n"
      "Progress goes to stderr, the summary to stdout. Ctrl-C stops early and still writes what was\n"
      "measured, marked \"complete\": false.");
  cmd->callback([args, &context] { run(*args, context); });
}

}  // namespace truepeak::cli
