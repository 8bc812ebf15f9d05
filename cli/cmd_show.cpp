// `truepeak show`: print a profile's summary.
#include <iostream>

#include "calibrate/profile_summary.hpp"
#include "cli/commands.hpp"
#include "core/profile.hpp"
#include "core/read_file.hpp"
#include "report/summary.hpp"

namespace truepeak::cli {

void add_show_command(CLI::App& app, const Context&) {
  auto path = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("show", "Print the summary of a profile: measured, datasheet and ratio per figure");
  cmd->add_option("PROFILE", *path, "Profile file written by 'truepeak calibrate'")->required();
  cmd->callback([path] {
    const auto profile = load_profile_file(*path);
    std::cout << profile_summary(profile) << report::runtimes_summary(profile);
  });
}

}  // namespace truepeak::cli
