// truepeak plan --model M [--runtime R] [--dtype D] --qps Q|--tokens-per-s T --max-latency-ms L
// [--headroom 0.2] [--growth G] [--peak-qps P|--peak-tokens-per-s P] [--price LABEL=USD ...]
// [--format table|md|json] P1 P2 ...
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <memory>

#include "cli/commands.hpp"
#include "cli/serving_input.hpp"
#include "core/error.hpp"
#include "core/profile.hpp"
#include "report/plan.hpp"

namespace truepeak::cli {
namespace {

struct PlanArgs {
  std::vector<std::string> profiles;
  WorkloadArgs workload;
  double qps = 0, tokens_per_s = 0, peak_qps = 0, peak_tokens_per_s = 0;
  double max_latency_ms = 0;
  double headroom = 0.2;
  double growth = 1.0;
  std::vector<std::string> prices;
  std::string format = "table";
  // Which of the loads the command line gave.
  bool qps_given = false, tokens_given = false, peak_qps_given = false, peak_tokens_given = false;
};

report::PlanLoad plan_load(const PlanArgs& args) {
  if (args.qps_given == args.tokens_given)
    throw InputError(
        args.qps_given
            ? "--qps and --tokens-per-s: give the load one way, requests or output tokens per second"
            : "no load: give --qps (requests per second) or, for a decoder, --tokens-per-s (output "
              "tokens per second)");
  if (args.peak_qps_given && args.tokens_given)
    throw InputError(fmt::format(
        "--peak-qps {}: the load is in output tokens (--tokens-per-s): give the peak with "
        "--peak-tokens-per-s",
        args.peak_qps));
  if (args.peak_tokens_given && args.qps_given)
    throw InputError(fmt::format(
        "--peak-tokens-per-s {}: the load is in requests (--qps): give the peak with --peak-qps",
        args.peak_tokens_per_s));
  report::PlanLoad load;
  load.tokens = args.tokens_given;
  load.base_per_s = args.tokens_given ? args.tokens_per_s : args.qps;
  if (args.peak_qps_given) load.peak_per_s = args.peak_qps;
  if (args.peak_tokens_given) load.peak_per_s = args.peak_tokens_per_s;
  load.headroom = args.headroom;
  load.growth = args.growth;
  load.max_latency_s = args.max_latency_ms / 1e3;
  report::check_load(load);
  return load;
}

void run_plan(const PlanArgs& args) {
  check_table_format(args.format);
  positive_figure(args.max_latency_ms, "--max-latency-ms", "a time above 0 ms");
  const auto load = plan_load(args);
  const auto prices = report::parse_prices(args.prices);
  std::vector<Profile> profiles;
  for (const auto& path : args.profiles) profiles.push_back(load_profile_file(path));
  ServingEstimator estimator(args.workload, profiles, args.profiles, 1);
  const auto plan = report::make_plan(profiles, args.profiles, prices, estimator.workload(), load,
                                      estimator.predictor());
  if (args.format == "json") {
    std::cout << report::plan_to_json(plan).dump(2) << "\n";
  } else if (args.format == "md") {
    std::cout << report::plan_to_markdown(plan);
  } else {
    std::cout << report::plan_to_text(plan);
  }
}

}  // namespace

void add_plan_command(CLI::App& app, const Context& /*context*/) {
  auto args = std::make_shared<PlanArgs>();
  auto* cmd = app.add_subcommand(
      "plan",
      "Capacity planning from measured profiles: for each device, the largest batch that meets "
      "the latency\ntarget, one instance's throughput there, the instances a load needs and their "
      "cost:\n  capacity  = max(base x (1 + headroom), peak x growth)\n  instances = "
      "ceil(capacity / one instance's throughput at that batch)\n  USD/hour  = instances x price; "
      "USD per 1M = USD/hour / (base x 3600) x 1e6\nEvery time comes from the estimator on the "
      "profile (as 'truepeak estimate'), never from a datasheet.\nSee docs/report.md (\"plan\").");
  cmd->add_option("profiles", args->profiles, "Profile JSON files, one row per device")->required();
  cmd->add_option("--model", args->workload.model,
                  "Model to serve: zoo name (see 'truepeak models'), a model JSON file or an .onnx "
                  "file")
      ->required();
  add_workload_options(*cmd, args->workload);
  cmd->add_option("--qps", args->qps,
                  "Base load in requests per second (a request: one inference; decoders: a "
                  "prompt of --seq tokens and --output-tokens generated)");
  cmd->add_option("--tokens-per-s", args->tokens_per_s,
                  "Decoders: base load in output tokens per second, instead of --qps");
  cmd->add_option("--peak-qps", args->peak_qps,
                  "The highest load in requests per second, at least --qps (default: --qps)");
  cmd->add_option("--peak-tokens-per-s", args->peak_tokens_per_s,
                  "With --tokens-per-s: the highest load in output tokens per second (default: "
                  "--tokens-per-s)");
  cmd->add_option("--max-latency-ms", args->max_latency_ms,
                  "Latency target in ms: of one pass of a batch (a request waits for its whole "
                  "batch); decoders: of one decode step, the time per output token (the time to "
                  "first token is shown, not bounded)")
      ->required();
  cmd->add_option("--headroom", args->headroom,
                  "Spare capacity over the base load, a fraction (0.2: 20%)")
      ->capture_default_str();
  cmd->add_option("--growth", args->growth,
                  "Factor the peak load grows by over the plan's horizon (1.5: by half); the "
                  "capacity is the larger of base x (1 + headroom) and peak x growth")
      ->capture_default_str();
  cmd->add_option("--price", args->prices,
                  "LABEL=USD: price per hour of one instance of the machine with that label, over "
                  "the profile's price_per_hour_usd (repeatable)")
      // One LABEL=USD per --price: the profiles may follow it.
      ->allow_extra_args(false);
  cmd->add_option("--format", args->format, "table, md or json")->capture_default_str();
  cmd->callback([args, cmd] {
    note_given_workload_options(*cmd, args->workload);
    args->qps_given = cmd->count("--qps") > 0;
    args->tokens_given = cmd->count("--tokens-per-s") > 0;
    args->peak_qps_given = cmd->count("--peak-qps") > 0;
    args->peak_tokens_given = cmd->count("--peak-tokens-per-s") > 0;
    run_plan(*args);
  });
}

}  // namespace truepeak::cli
