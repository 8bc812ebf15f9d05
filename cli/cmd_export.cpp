// truepeak export --to llm-analysis|calculon|csv|prometheus PROFILE [--device ID] [-o FILE]
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "core/profile.hpp"
#include "report/export.hpp"

namespace truepeak::cli {
namespace {

struct ExportArgs {
  std::string to;
  std::string profile;
  std::string device;
  std::string out;
};

void run_export(const ExportArgs& args) {
  const auto format =
      report::parse_export_format(args.to);  // first: a typo fails before any file is read
  const auto profile = read_profile(args.profile);
  const auto result = report::export_profile(profile, format, args.device, args.profile);
  if (args.out.empty()) {
    std::cout << result.text;
    // stdout carries the file alone (pipe it anywhere); the notes go beside it on stderr.
    for (const auto& note : result.notes) std::cerr << note << "\n";
  } else {
    write_file_atomic(args.out, result.text);
    std::cout << "wrote " << args.out << "\n";
    for (const auto& note : result.notes) std::cout << note << "\n";
  }
}

}  // namespace

void add_export_command(CLI::App& app, const Context& /*context*/) {
  auto args = std::make_shared<ExportArgs>();
  auto* cmd =
      app.add_subcommand("export", "Write a profile's measured figures in another tool's format");
  cmd->add_option("--to", args->to, "llm-analysis, calculon, csv or prometheus")->required();
  cmd->add_option("profile", args->profile, "Profile JSON file")->required();
  cmd->add_option("--device", args->device,
                  "Device id (llm-analysis/calculon default: the first GPU, else the CPU; "
                  "csv/prometheus: all)");
  cmd->add_option("-o,--out", args->out, "Output file (default: stdout)");
  cmd->callback([args] { run_export(*args); });
}

}  // namespace truepeak::cli
