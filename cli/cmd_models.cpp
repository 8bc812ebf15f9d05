// `truepeak models`: list the built-in model zoo.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "estimate/estimator.hpp"

namespace truepeak::cli {

void add_models_command(CLI::App& app, const Context&) {
  auto format = std::make_shared<std::string>("table");
  auto* cmd = app.add_subcommand(
      "models",
      "List the built-in model zoo: name, kind, parameters and forward GFLOPs (batch 1, default "
      "sequence "
      "length; FLOPs = 2 x multiply-adds). Use a name with 'truepeak estimate --model NAME'.");
  cmd->add_option("--format", *format, "Output: table, json or md")->capture_default_str();
  cmd->callback([format] {
    const auto zoo = estimate::list_zoo();
    if (*format == "json") {
      nlohmann::json doc = nlohmann::json::array();
      for (const auto& m : zoo)
        doc.push_back({{"name", m.name},
                       {"kind", m.kind},
                       {"params", m.params},
                       {"forward_flops", m.forward_flops},
                       {"seq", m.seq ? nlohmann::json(*m.seq) : nlohmann::json(nullptr)},
                       {"description", m.description}});
      std::cout << doc.dump(2) << "\n";
      return;
    }
    if (*format != "table" && *format != "md")
      throw InputError(fmt::format("--format {}: expected table, json or md", *format));
    if (*format == "md") {
      std::cout << "| model | kind | params (M) | GFLOPs | seq | description "
                   "|\n|---|---|---:|---:|---:|---|\n";
      for (const auto& m : zoo)
        std::cout << fmt::format("| {} | {} | {:.2f} | {:.2f} | {} | {} |\n", m.name, m.kind,
                                 m.params / 1e6, m.forward_flops / 1e9,
                                 m.seq ? std::to_string(*m.seq) : "", m.description);
      return;
    }
    std::cout << fmt::format("{:<14} {:<19} {:>12} {:>10} {:>6}  {}\n", "model", "kind",
                             "params (M)", "GFLOPs", "seq", "description");
    for (const auto& m : zoo)
      std::cout << fmt::format("{:<14} {:<19} {:>12.2f} {:>10.2f} {:>6}  {}\n", m.name, m.kind,
                               m.params / 1e6, m.forward_flops / 1e9,
                               m.seq ? std::to_string(*m.seq) : "", m.description);
  });
}

}  // namespace truepeak::cli
