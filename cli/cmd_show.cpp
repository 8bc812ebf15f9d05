// `truepeak show`: print a profile's summary.
#include <iostream>

#include "calibrate/summary.hpp"
#include "cli/commands.hpp"
#include "core/profile.hpp"

namespace truepeak::cli {

void add_show_command(CLI::App& app, const Context&) {
  auto path = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("show", "Print the summary of a profile: measured, datasheet and ratio per figure");
  cmd->add_option("PROFILE", *path, "Profile file written by 'truepeak calibrate'")->required();
  cmd->callback([path] { std::cout << profile_summary(read_profile(*path)); });
}

}  // namespace truepeak::cli
