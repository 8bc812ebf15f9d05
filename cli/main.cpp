// truepeak: measured hardware profiles and estimates for deep-learning work.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "truepeak/version.hpp"

namespace {
// Parses the command line and runs the command: its exit status.
int run(CLI::App& app, int argc, char** argv);
// Flushes standard output; false (with one line on stderr) when a write to it failed.
bool flush_stdout();
}  // namespace

int main(int argc, char** argv) {
  truepeak::cli::Context context;
  context.argv.assign(argv, argv + argc);

  CLI::App app{
      "truepeak measures what this machine really delivers for deep-learning work (GEMM and convolution\n"
      "throughput per data type and shape, memory bandwidth per cache level, host<->device transfers,\n"
      "per-operation overhead), writes it as a calibrated hardware profile (JSON), and estimates a model's\n"
      "latency, throughput and memory from the measured figures.",
      "truepeak"};
  app.set_version_flag("--version", std::string("truepeak ") + TRUEPEAK_VERSION + " (" + TRUEPEAK_GIT_SHA + ")");
  app.require_subcommand(1);
  app.footer(
      "Exit status: 0 on success, 2 on bad usage or bad input, 1 on a runtime failure.\n"
      "Run 'truepeak COMMAND --help' for the options of one command.");

  truepeak::cli::add_calibrate_command(app, context);
  truepeak::cli::add_show_command(app, context);
  truepeak::cli::add_estimate_command(app, context);
  truepeak::cli::add_models_command(app, context);
  truepeak::cli::add_compare_command(app, context);
  truepeak::cli::add_plan_command(app, context);
  truepeak::cli::add_export_command(app, context);
  truepeak::cli::add_report_command(app, context);

  // CLI11 reports an unknown first word as a missing subcommand; name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const auto* sub : app.get_subcommands({})) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
      known = known || sub->get_name() == argv[1];
    }
    if (!known) {
      std::cerr << "truepeak: unknown command '" << argv[1] << "' (commands: " << names << ")\n";
      return 2;
    }
  }

  const int status = run(app, argc, argv);
  // Results go to stdout: a write that failed there (a full disk, a closed descriptor) loses them,
  // so it is a failure of the command, not a success with nothing to show.
  if (status == 0 && !flush_stdout()) return 1;
  return status;
}

namespace {

int run(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "truepeak: " << e.what() << " (see 'truepeak --help')\n";
    return 2;
  } catch (const truepeak::InputError& e) {
    std::cerr << "truepeak: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "truepeak: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

bool flush_stdout() {
  // std::cout writes through stdout's buffer: the flush of either reports the error, once.
  errno = 0;
  std::cout.flush();
  int error = errno;
  if (std::fflush(stdout) != 0) error = errno;
  if (std::cout.good() && !std::ferror(stdout)) return true;
  std::cerr << "truepeak: cannot write the output to standard output: "
            << (error != 0 ? std::strerror(error) : "a write failed") << "\n";
  return false;
}

}  // namespace
