// truepeak export --to llm-analysis|calculon|csv|prometheus PROFILE [--device ID] [--network FILE]
//                 [-o FILE]
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "core/output_file.hpp"
#include "core/profile.hpp"
#include "core/read_file.hpp"
#include "report/export.hpp"

namespace truepeak::cli {
namespace {

struct ExportArgs {
  std::string to;
  std::string profile;
  std::string device;
  std::string network;
  std::string out;
};

void run_export(const ExportArgs& args) {
  // First: a typo or a bad output path fails before any file is read.
  const auto format = report::parse_export_format(args.to);
  const std::string out = args.out.empty() ? "-" : args.out;
  check_output_path(out, "-o");
  const auto profile = load_profile_file(args.profile);
  const auto result =
      report::export_profile(profile, format, args.device, args.profile, {args.network});
  write_output(out, result.text, "-o");
  // stdout carries the file alone (pipe it anywhere); what was written, the warnings and the notes
  // go to stderr.
  if (!is_stdout_path(out))
    std::cerr << "wrote " << out << " (" << result.text.size() << " bytes)\n";
  for (const auto& warning : result.warnings) std::cerr << "truepeak: warning: " << warning << "\n";
  for (const auto& note : result.notes) std::cerr << note << "\n";
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
  cmd->add_option("--network", args->network,
                  "Calculon: a JSON file of your networks (a network object, a list of them or "
                  "{\"networks\": [...]}), written in place of the measured host link");
  cmd->add_option("-o,--out", args->out, "Output file, or - for standard output (the default)");
  cmd->callback([args] { run_export(*args); });
}

}  // namespace truepeak::cli
