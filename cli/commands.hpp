// Each subcommand registers itself on the CLI11 app. Callbacks throw truepeak::InputError on bad
// input (exit 2) and truepeak::Error on a runtime failure (exit 1); main() maps them to exit codes.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/profile.hpp"

namespace truepeak::cli {

struct Context {
  std::vector<std::string> argv;  // the full command line, recorded in profiles
};

// Reads a profile file (size-limited, schema-checked); a CPU datasheet of an older derivation
// rule is derived again from the properties the profile stores, its source saying so.
Profile load_profile_file(const std::string& path);
Profile with_current_datasheets(Profile profile);

void add_calibrate_command(CLI::App& app, const Context& context);
void add_show_command(CLI::App& app, const Context& context);
void add_estimate_command(CLI::App& app, const Context& context);
void add_models_command(CLI::App& app, const Context& context);
void add_compare_command(CLI::App& app, const Context& context);
void add_plan_command(CLI::App& app, const Context& context);
void add_export_command(CLI::App& app, const Context& context);
void add_report_command(CLI::App& app, const Context& context);

}  // namespace truepeak::cli
