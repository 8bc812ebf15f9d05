// truepeak compare P1 P2 ... [--model M --batch N --dtype D --runtime R] [--seq S --context T
// --output-tokens N] [--max-latency-ms L] [--price LABEL=USD ...] [--format table|md|json]
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <memory>

#include "cli/commands.hpp"
#include "cli/serving_input.hpp"
#include "core/error.hpp"
#include "core/profile.hpp"
#include "report/compare.hpp"

namespace truepeak::cli {
namespace {

struct CompareArgs {
  std::vector<std::string> profiles;
  WorkloadArgs workload;
  std::int64_t batch = 1;
  double max_latency_ms = 0;
  bool max_latency_given = false;
  std::string workload_flag;  // a flag that needs --model, given (empty: none)
  std::vector<std::string> prices;
  std::string format = "table";
};

void run_compare(const CompareArgs& args) {
  check_table_format(args.format);
  const bool model = !args.workload.model.empty();
  if (!model && !args.workload_flag.empty())
    throw InputError(fmt::format("{}: applies with --model", args.workload_flag));
  if (!model && args.max_latency_given)
    throw InputError("--max-latency-ms: applies with --model");
  if (args.max_latency_given)
    positive_figure(args.max_latency_ms, "--max-latency-ms", "a time above 0 ms");
  if (model && args.batch < 1)
    throw InputError(fmt::format("--batch {}: must be at least 1", args.batch));
  const auto prices = report::parse_prices(args.prices);
  std::vector<Profile> profiles;
  for (const auto& path : args.profiles) profiles.push_back(load_profile_file(path));
  auto comparison = report::compare_profiles(profiles, prices, args.profiles);

  if (model) {
    ServingEstimator estimator(args.workload, profiles, args.profiles, args.batch);
    const auto predict = estimator.predictor();
    report::add_cost(comparison, profiles, estimator.workload(), args.batch, predict);
    if (args.max_latency_given)
      report::add_cost_within(comparison, profiles, estimator.workload(),
                              args.max_latency_ms / 1e3, predict);
  }

  if (args.format == "json") {
    std::cout << report::comparison_to_json(comparison).dump(2) << "\n";
  } else if (args.format == "md") {
    std::cout << report::comparison_to_markdown(comparison);
  } else {
    std::cout << report::comparison_to_text(comparison);
  }
}

}  // namespace

void add_compare_command(CLI::App& app, const Context& /*context*/) {
  auto args = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand(
      "compare",
      "Compare machines side by side on measured figures and, with --model, on what the "
      "estimator\npredicts from each profile: latency, throughput and cost per million inferences; "
      "for a decoder,\ntime to first token, time per output token and cost per million input and "
      "output tokens");
  cmd->add_option("profiles", args->profiles,
                  "Profile JSON files; ratios are to the first one's first device")
      ->required();
  cmd->add_option("--model", args->workload.model,
                  "Model (zoo name or file): predict latency, throughput and cost per device");
  cmd->add_option("--batch", args->batch,
                  "Batch size for --model (decoders: requests decoded together)")
      ->capture_default_str();
  add_workload_options(*cmd, args->workload);
  cmd->add_option("--max-latency-ms", args->max_latency_ms,
                  "With --model: also each device at the largest batch whose latency is at most "
                  "this many ms (decoders: per output token; others: one pass of the batch), and "
                  "its cost");
  cmd->add_option("--price", args->prices,
                  "LABEL=USD: price per hour of the machine with that label, over the profile's "
                  "price_per_hour_usd (repeatable)")
      // One LABEL=USD per --price: the profiles may follow it.
      ->allow_extra_args(false);
  cmd->add_option("--format", args->format, "table, md or json")->capture_default_str();
  cmd->callback([args, cmd] {
    note_given_workload_options(*cmd, args->workload);
    args->max_latency_given = cmd->count("--max-latency-ms") > 0;
    args->workload_flag = workload_flag_given(*cmd);
    run_compare(*args);
  });
}

}  // namespace truepeak::cli
