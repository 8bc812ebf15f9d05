// `truepeak calibrate`: measure this machine's devices into a profile.
#include <atomic>
#include <cstdlib>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string_view>
#include <unistd.h>

#include <fmt/format.h>

#include "calibrate/backends.hpp"
#include "calibrate/driver.hpp"
#include "calibrate/machine.hpp"
#include "calibrate/profile_summary.hpp"
#include "calibrate/runtime_probe.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"
#include "report/summary.hpp"

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
  std::string runtimes;  // NAME[:LABEL],...
  std::string python;
  std::string add_to;
};

// Fails before any measuring when the output (named by `flag`) cannot be written.
void check_writable(const std::string& path, const char* flag = "--out") {
  // A profile is a file that later commands read, and that an interrupted run keeps: never
  // standard output, nor a device, FIFO or directory (check_output_path).
  if (is_stdout_path(path))
    throw InputError(fmt::format("{} -: a profile is written to a file; give its path", flag));
  check_output_path(path, flag);
  const std::filesystem::path p(path);
  const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
  if (::access(dir.c_str(), W_OK) != 0) {
    throw InputError(fmt::format("{} {}: directory '{}' is not writable", flag, path, dir.string()));
  }
}

void install_interrupt_handler() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  action.sa_flags = SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

RuntimeRunOptions runtime_run_options(const CalibrateArgs& args) {
  RuntimeRunOptions o;
  o.python_path = runtimes_python_path();
  o.threads = args.threads;
  o.quick = args.quick;
  o.stop = &g_stop_requested;
  o.progress = [](const std::string& line) { std::cerr << line << std::endl; };
  // The probes' progress, as they write it.
  o.on_stderr = [](std::string_view chunk) { std::cerr.write(chunk.data(), static_cast<std::streamsize>(chunk.size())).flush(); };
  return o;
}

// One line for the failures, after the profile with what was measured is written: a framework
// that is missing or too old is the user's to install (exit 2), anything else a failure (exit 1).
void report_runtime_failures(const RuntimeRunSummary& summary) {
  if (summary.failures.empty()) return;
  std::string line;
  for (const auto& f : summary.failures) line += (line.empty() ? "" : "; ") + f;
  if (summary.framework_missing_only) throw InputError(line);
  throw Error(line);
}

// --add-to FILE: the runtimes only, into a profile that exists.
void add_runtimes(const CalibrateArgs& args, const std::vector<RuntimeRequest>& requests) {
  if (!args.out.empty() || !args.label.empty() || args.price_per_hour)
    throw InputError(fmt::format("--add-to {}: measures runtimes into that profile; --out, --label and "
                                 "--price-per-hour belong to a new calibration", args.add_to));
  Profile profile = read_profile(args.add_to);
  check_writable(args.add_to, "--add-to");
  std::vector<std::string> ids;
  for (const auto& d : profile.devices)
    if (args.device == "all" || d.id == args.device || (args.device == "cuda" && d.id == "cuda:0")) ids.push_back(d.id);
  if (ids.empty()) {
    std::string have;
    for (const auto& d : profile.devices) have += (have.empty() ? "" : ", ") + d.id;
    throw InputError(fmt::format("--device {}: not in {} (it has: {})", args.device, args.add_to, have));
  }
  const auto options = runtime_run_options(args);
  const auto plan = plan_runtime_probes(requests, ids, args.python);
  check_runtimes_package(options.python_path);

  install_interrupt_handler();
  const auto summary = run_runtime_probes(profile, plan, options);
  // The records just measured are in this truepeak's format: an older profile takes its schema
  // version, so that a reader knows to expect their fields (its other figures are as they were).
  const auto dot = profile.schema_version.find('.');
  const int minor = dot == std::string::npos ? 0 : std::atoi(profile.schema_version.c_str() + dot + 1);
  if (!summary.measured.empty() && minor < kSchemaMinor) profile.schema_version = schema_version_string();
  if (!summary.measured.empty()) write_profile(args.add_to, profile);
  std::cout << report::runtimes_summary(profile);
  if (summary.interrupted) {
    std::cerr << fmt::format("truepeak: interrupted: {}\n",
                             summary.measured.empty() ? fmt::format("{} is unchanged", args.add_to)
                                                      : fmt::format("wrote the runtimes measured to {}", args.add_to));
  } else if (!summary.measured.empty()) {
    std::cerr << fmt::format("truepeak: wrote {}\n", args.add_to);
  }
  report_runtime_failures(summary);
}

void run(const CalibrateArgs& args, const Context& context) {
  if (args.threads < 0) throw InputError(fmt::format("--threads {}: must be 0 (all cores) or more", args.threads));
  if (args.price_per_hour && *args.price_per_hour < 0) {
    throw InputError(fmt::format("--price-per-hour {}: must not be negative", *args.price_per_hour));
  }
  const auto requests = args.runtimes.empty() ? std::vector<RuntimeRequest>{} : parse_runtime_list(args.runtimes);
  if (requests.empty() && !args.python.empty()) throw InputError("--python: has no effect without --runtime");
  if (!args.add_to.empty()) {
    if (requests.empty()) throw InputError(fmt::format("--add-to {}: needs --runtime NAME", args.add_to));
    add_runtimes(args, requests);
    return;
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
  const auto out = args.out.empty() ? fmt::format("profiles/{}.json", options.label) : args.out;
  if (args.out.empty()) {
    // The default place is truepeak's own: make it. A directory named with --out must exist.
    std::error_code ec;
    std::filesystem::create_directories("profiles", ec);
  }
  check_writable(out);
  // Whatever could stop the runtimes is found before the hardware is measured.
  std::vector<PlannedProbe> plan;
  std::optional<RuntimeRunOptions> runtime_options;
  if (!requests.empty()) {
    runtime_options = runtime_run_options(args);
    plan = plan_runtime_probes(requests, selection.ids, args.python);
    check_runtimes_package(runtime_options->python_path);
  }
  for (const auto& note : selection.notes) std::cerr << "truepeak: " << note << "\n";

  install_interrupt_handler();
  auto profile = run_calibration(options);
  RuntimeRunSummary summary;
  if (!plan.empty() && profile.complete) {
    summary = run_runtime_probes(profile, plan, *runtime_options);
    if (summary.interrupted) profile.complete = false;
  }
  write_profile(out, profile);
  std::cout << profile_summary(profile) << report::runtimes_summary(profile);
  if (profile.complete) {
    std::cerr << fmt::format("truepeak: wrote {}\n", out);
  } else {
    std::cerr << fmt::format("truepeak: interrupted: wrote what was measured to {} (\"complete\": false)\n", out);
  }
  report_runtime_failures(summary);
}

}  // namespace

void add_calibrate_command(CLI::App& app, const Context& context) {
  auto args = std::make_shared<CalibrateArgs>();
  auto* cmd = app.add_subcommand("calibrate", "Measure this machine's devices and write a calibrated profile (JSON)");
  cmd->add_option("--device", args->device, "Devices to calibrate: cpu, cuda:N, or all (the CPU and every GPU)")
      ->capture_default_str();
  cmd->add_flag("--quick", args->quick, "Short suite (about 30 s on a 2-core CPU): fewer shapes and samples");
  cmd->add_option("--label", args->label, "Name of this machine in the profile (default: the host name)");
  cmd->add_option("--out", args->out, "Profile file to write (default: profiles/<label>.json)");
  cmd->add_option("--price-per-hour", args->price_per_hour, "Price of this machine in USD per hour, for cost comparisons");
  cmd->add_option("--threads", args->threads, "CPU threads (0: all cores)")->capture_default_str();
  cmd->add_option("--runtime", args->runtimes,
                  "Also calibrate these runtimes, NAME[:LABEL],... (torch-jit, torch-eager, torch-compile, "
                  "torch-cudagraph, onnxruntime): the framework's own costs, measured by its probes in Python "
                  "(docs/runtimes.md); a LABEL keeps a second calibration of one runtime apart, and a LABEL "
                  "that names a dtype runs it in that dtype (torch-eager:bf16; torch-eager runs f32 on a CPU "
                  "otherwise)");
  cmd->add_option("--python", args->python,
                  "With --runtime: the Python interpreter that has the framework (default: the project's "
                  ".venv where it has the framework, else /usr/bin/python3)");
  cmd->add_option("--add-to", args->add_to,
                  "With --runtime: measure only the runtimes and add them to this profile (written back in "
                  "place, at this truepeak's schema version)");
  cmd->footer(
      "The default suite takes about 3 minutes on a 2-core CPU. On the CPU both suites aim to end by a\n"
      "time goal (170 s, --quick 27 s): on a busy host the optional second looks and re-measures give\n"
      "way to it, and the profile's conditions say what was left out.\n"
      "Progress goes to stderr, the summary to stdout. Ctrl-C stops early and still writes what was\n"
      "measured, marked \"complete\": false.\n"
      "--runtime runs 'PYTHON -m runtimes' per runtime after the hardware (PYTHONPATH: the source tree,\n"
      "or $TRUEPEAK_RUNTIMES_DIR). A framework that is missing or too old exits 2, any other failure 1;\n"
      "the profile keeps what was measured either way.");
  cmd->callback([args, &context] { run(*args, context); });
}

}  // namespace truepeak::cli
