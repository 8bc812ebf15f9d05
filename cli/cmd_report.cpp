// truepeak report PROFILE [PROFILE ...] -o report.html
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "core/profile.hpp"
#include "report/html_report.hpp"

namespace truepeak::cli {
namespace {

struct ReportArgs {
  std::vector<std::string> profiles;
  std::string out;
};

void run_report(const ReportArgs& args) {
  std::vector<Profile> profiles;
  for (const auto& path : args.profiles) profiles.push_back(read_profile(path));
  const auto html = report::render_report_html(profiles, args.profiles);
  write_file_atomic(args.out, html);
  std::cerr << "wrote " << args.out << " (" << html.size() << " bytes)\n";
}

}  // namespace

void add_report_command(CLI::App& app, const Context& /*context*/) {
  auto args = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand(
      "report", "Write one self-contained HTML report (tables and SVG plots) of profiles");
  cmd->add_option("profiles", args->profiles, "Profile JSON files")->required();
  cmd->add_option("-o,--out", args->out, "Output HTML file")->required();
  cmd->callback([args] { run_report(*args); });
}

}  // namespace truepeak::cli
