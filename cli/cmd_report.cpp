// truepeak report PROFILE [PROFILE ...] -o report.html
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "core/output_file.hpp"
#include "core/profile.hpp"
#include "core/read_file.hpp"
#include "report/html_report.hpp"

namespace truepeak::cli {
namespace {

struct ReportArgs {
  std::vector<std::string> profiles;
  std::string out;
};

void run_report(const ReportArgs& args) {
  check_output_path(args.out, "-o");  // before any work
  std::vector<Profile> profiles;
  for (const auto& path : args.profiles)
    profiles.push_back(load_profile_file(path));
  const auto html = report::render_report_html(profiles, args.profiles);
  write_output(args.out, html, "-o");
  if (!is_stdout_path(args.out)) std::cerr << "wrote " << args.out << " (" << html.size() << " bytes)\n";
}

}  // namespace

void add_report_command(CLI::App& app, const Context& /*context*/) {
  auto args = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand(
      "report", "Write one self-contained HTML report (tables and SVG plots) of profiles");
  cmd->add_option("profiles", args->profiles, "Profile JSON files")->required();
  cmd->add_option("-o,--out", args->out, "Output HTML file, or - for standard output")->required();
  cmd->callback([args] { run_report(*args); });
}

}  // namespace truepeak::cli
