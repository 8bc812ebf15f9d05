// truepeak compare P1 P2 ... [--model M --batch N --dtype D] [--price LABEL=USD ...] [--format
// table|md|json]
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <memory>

#include "cli/commands.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/profile.hpp"
#include "estimate/estimator.hpp"
#include "report/compare.hpp"
#ifdef TRUEPEAK_HAVE_ONNX
#include "estimate/onnx_import.hpp"
#endif

namespace truepeak::cli {
namespace {

struct CompareArgs {
  std::vector<std::string> profiles;
  std::string model;
  std::int64_t batch = 1;
  std::string dtype = "f32";
  std::vector<std::string> prices;
  std::string format = "table";
};

// A zoo name, a model JSON file or an ONNX file read at `batch`; what the reader could only
// guess at goes to stderr, one line each.
estimate::Model load_compared_model(const std::string& name, std::int64_t batch) {
  estimate::Model model;
#ifdef TRUEPEAK_HAVE_ONNX
  if (estimate::is_onnx_path(name)) {
    estimate::OnnxOptions o;
    o.batch = batch;
    auto imported = estimate::load_onnx(name, o);
    for (const auto& w : imported.warnings) std::cerr << "truepeak: " << name << ": " << w << "\n";
    model = std::move(imported.model);
    model.source = name;
    return model;
  }
#else
  if (name.ends_with(".onnx"))
    throw InputError(fmt::format("{}: this truepeak was built without ONNX support (TRUEPEAK_ENABLE_ONNX)", name));
#endif
  model = estimate::load_model(name);
  for (const auto& w : model.warnings) std::cerr << "truepeak: " << name << ": " << w << "\n";
  return model;
}

report::Predictor estimator_predictor(const estimate::Model& model, const estimate::Options& base) {
  return [&model, base](const Profile& profile, const Device& device) {
    report::Prediction out;
    auto options = base;
    options.per_op_rows = false;
    if (const auto bytes = estimate::device_memory_bytes(profile, device)) {
      options.memory_bytes = static_cast<std::int64_t>(*bytes);
    }
    try {
      const auto e = estimate::estimate(model, device, options);
      out.latency_s = e.latency_s;
      out.naive_latency_s = e.naive_latency_s;
      out.fits = e.memory.fits;
    } catch (const InputError& error) {
      // One device lacking a figure (a CPU without bf16) must not hide the others' results.
      out.error = error.what();
    }
    return out;
  };
}

void run_compare(const CompareArgs& args) {
  if (args.format != "table" && args.format != "md" && args.format != "json") {
    throw InputError(fmt::format("--format '{}': use table, md or json", args.format));
  }
  std::map<std::string, double> prices;
  for (const auto& text : args.prices) {
    const auto [label, usd] = report::parse_price(text);
    prices[label] = usd;
  }
  std::vector<Profile> profiles;
  for (const auto& path : args.profiles) profiles.push_back(load_profile_file(path));
  auto comparison = report::compare_profiles(profiles, prices);

  if (!args.model.empty()) {
    const auto dtype = parse_dtype(args.dtype);
    if (!dtype)
      throw InputError(fmt::format(
          "--dtype '{}': unknown data type (f32, tf32, bf16, f16, fp8, int8)", args.dtype));
    if (args.batch < 1) throw InputError(fmt::format("--batch {}: must be at least 1", args.batch));
    const auto model = load_compared_model(args.model, args.batch);
    estimate::Options options;
    options.dtype = *dtype;
    // An ONNX graph is read with the batch in its shapes: one pass of it is the whole batch.
    options.batch = model.source == args.model && model.source.ends_with(".onnx") ? 1 : args.batch;
    report::add_cost(comparison, profiles, args.model, static_cast<int>(args.batch),
                     std::string(to_string(*dtype)), estimator_predictor(model, options));
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
      "compare", "Compare machines side by side on measured figures and, with --model, on cost");
  cmd->add_option("profiles", args->profiles,
                  "Profile JSON files; ratios are to the first one's first device")
      ->required();
  cmd->add_option("--model", args->model,
                  "Model (zoo name or file): predict latency, throughput and cost per device");
  cmd->add_option("--batch", args->batch, "Batch size for --model")->capture_default_str();
  cmd->add_option("--dtype", args->dtype, "Data type for --model (f32, bf16, f16, int8, ...)")
      ->capture_default_str();
  cmd->add_option("--price", args->prices,
                  "LABEL=USD: price per hour of the machine with that label (repeatable)");
  cmd->add_option("--format", args->format, "table, md or json")->capture_default_str();
  cmd->callback([args] { run_compare(*args); });
}

}  // namespace truepeak::cli
