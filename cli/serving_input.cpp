#include "cli/serving_input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "estimate/runtime_apply.hpp"
#ifdef TRUEPEAK_HAVE_ONNX
#include "estimate/onnx_import.hpp"
#endif

namespace truepeak::cli {

namespace {

constexpr const char* kWorkloadFlags[] = {"--seq", "--context", "--output-tokens", "--runtime"};

bool is_onnx_name(const std::string& name) {
#ifdef TRUEPEAK_HAVE_ONNX
  return estimate::is_onnx_path(name);
#else
  if (name.ends_with(".onnx"))
    throw InputError(fmt::format(
        "{}: this truepeak was built without ONNX support (TRUEPEAK_ENABLE_ONNX)", name));
  return false;
#endif
}

std::optional<std::int64_t> default_seq(const estimate::Model& model) {
  for (const auto& [name, value] : model.defaults)
    if (name == "S") return value;
  return std::nullopt;
}

}  // namespace

void add_workload_options(CLI::App& cmd, WorkloadArgs& args) {
  cmd.add_option("--dtype", args.dtype,
                 "Data type of weights and activations for --model (f32, tf32, bf16, f16, fp8, "
                 "int8)")
      ->capture_default_str();
  cmd.add_option("--runtime", args.runtime,
                 "Apply the runtime each profile has calibrated under this key (calibrate "
                 "--runtime; docs/runtimes.md); a device without it says so on its row (default: "
                 "the library alone)");
  cmd.add_option("--seq", args.seq,
                 "Tokens of the prompt (decoders) or of a sequence (encoders) (default: the "
                 "model's)");
  cmd.add_option("--context", args.context,
                 "Decoders: the context the decode step is timed at, at least --seq (default: "
                 "--seq + --output-tokens / 2, the middle of the generation, whose step costs the "
                 "average of the request's as attention grows with the context)");
  cmd.add_option("--output-tokens", args.output_tokens,
                 "Decoders: tokens generated per request; the first comes from the prefill, each "
                 "further one from a decode step")
      ->capture_default_str();
}

void note_given_workload_options(const CLI::App& cmd, WorkloadArgs& args) {
  args.seq_given = cmd.count("--seq") > 0;
  args.context_given = cmd.count("--context") > 0;
  args.output_tokens_given = cmd.count("--output-tokens") > 0;
}

std::string workload_flag_given(const CLI::App& cmd) {
  for (const char* flag : kWorkloadFlags)
    if (cmd.count(flag) > 0) return flag;
  return "";
}

double positive_figure(double value, const std::string& flag, const std::string& expected) {
  if (!(std::isfinite(value) && value > 0))
    throw InputError(fmt::format("{} {}: expected {}", flag, value, expected));
  return value;
}

void check_table_format(const std::string& format) {
  if (format != "table" && format != "md" && format != "json")
    throw InputError(fmt::format("--format '{}': use table, md or json", format));
}

ServingEstimator::ServingEstimator(const WorkloadArgs& args, const std::vector<Profile>& profiles,
                                   const std::vector<std::string>& paths,
                                   std::int64_t first_batch)
    : args_(args), profiles_(profiles), paths_(paths) {
  const auto dtype = parse_dtype(args.dtype);
  if (!dtype)
    throw InputError(fmt::format(
        "--dtype '{}': unknown data type (f32, tf32, bf16, f16, fp8, int8)", args.dtype));
  const auto at_least_one = [](bool given, std::int64_t value, const char* flag, const char* what) {
    if (given && value < 1)
      throw InputError(fmt::format("{} {}: {} is at least 1 token", flag, value, what));
  };
  at_least_one(args.seq_given, args.seq, "--seq", "a sequence");
  at_least_one(args.context_given, args.context, "--context", "a context");
  at_least_one(true, args.output_tokens,
               "--output-tokens", "a request's output");
  base_.dtype = *dtype;
  base_.per_op_rows = false;

  onnx_ = is_onnx_name(args.model);
  const estimate::Model* model = nullptr;
  if (onnx_) {
    model = &model_at(first_batch, {});
  } else {
    model_ = estimate::load_model(args.model);
    for (const auto& w : model_.warnings)
      std::cerr << "truepeak: " << args.model << ": " << w << "\n";
    model = &model_;
  }

  workload_.model = args.model;
  workload_.dtype = std::string(to_string(*dtype));
  workload_.runtime = args.runtime;
  workload_.decoder = model->decode.has_value();
  const auto seq = default_seq(*model);
  if (!workload_.decoder) {
    if (args.output_tokens_given)
      throw InputError(fmt::format("--output-tokens {}: {} is not a decoder (it generates no tokens)",
                                   args.output_tokens, args.model));
    if (args.context_given)
      throw InputError(fmt::format("--context {}: {} is not a decoder (it has no decode step)",
                                   args.context, args.model));
    if (args.seq_given && !seq && !onnx_)
      throw InputError(
          fmt::format("--seq {}: {} has no sequence length", args.seq, args.model));
    if (args.seq_given) workload_.seq = args.seq;
    else workload_.seq = seq;
    if (args.seq_given) base_.seq = args.seq;
    return;
  }
  if (!args.seq_given && !seq)
    throw InputError(fmt::format("{}: the model has no default prompt length; give --seq",
                                 args.model));
  const std::int64_t s = args.seq_given ? args.seq : *seq;
  const std::int64_t n = args.output_tokens;
  if (n > std::numeric_limits<std::int64_t>::max() - s)
    throw InputError(fmt::format("--output-tokens {}: the prompt and the output together overflow "
                                 "a 64-bit token count",
                                 n));
  const std::int64_t t = args.context_given ? args.context : s + n / 2;
  if (t < s)
    throw InputError(fmt::format(
        "--context {}: the decode step follows the {}-token prompt, so its context is at least "
        "--seq ({})",
        t, s, s));
  workload_.seq = s;
  workload_.context = t;
  workload_.output_tokens = n;
  base_.seq = s;
  base_.context = t;
}

const estimate::Model& ServingEstimator::model_at(std::int64_t batch,
                                                  const estimate::ImportRules& rules) {
  if (!onnx_) return model_;
#ifdef TRUEPEAK_HAVE_ONNX
  const auto key = std::pair{batch, rules};
  if (auto it = onnx_models_.find(key); it != onnx_models_.end()) return *it->second;
  estimate::OnnxOptions o;
  o.batch = batch;
  if (args_.seq_given) o.seq = args_.seq;
  o.rules = rules;
  auto imported = estimate::load_onnx(args_.model, o);
  // What the reader could only guess at is the same at every batch: said once.
  if (onnx_models_.empty())
    for (const auto& w : imported.warnings)
      std::cerr << "truepeak: " << args_.model << ": " << w << "\n";
  imported.model.source = args_.model;
  auto& slot = onnx_models_[key];
  slot = std::make_unique<estimate::Model>(std::move(imported.model));
  return *slot;
#else
  (void)batch;
  (void)rules;
  return model_;
#endif
}

const ServingEstimator::DeviceSetup& ServingEstimator::setup_for(const Profile& profile,
                                                                 const Device& device) {
  if (auto it = setups_.find(&device); it != setups_.end()) return it->second;
  DeviceSetup setup;
  setup.options = base_;
  if (const auto bytes = estimate::device_memory_bytes(profile, device))
    setup.options.memory_bytes = static_cast<std::int64_t>(*bytes);
  if (!args_.runtime.empty()) {
    std::string file = profile.machine.label;
    for (std::size_t i = 0; i < profiles_.size() && i < paths_.size(); ++i)
      if (&profiles_[i] == &profile) file = paths_[i];
    try {
      const auto& record = estimate::find_runtime(device, args_.runtime, file);
      for (const auto& note : estimate::apply_runtime(record, args_.runtime, setup.options))
        std::cerr << "truepeak: " << file << " " << device.id << ": " << note << "\n";
      setup.runtime_view = estimate::runtime_device(device, record);
      setup.import_rules = estimate::import_rules(record);
    } catch (const InputError& error) {
      // One device without the runtime must not hide the others' results.
      setup.error = error.what();
    }
  }
  return setups_.emplace(&device, std::move(setup)).first->second;
}

report::Prediction ServingEstimator::predict(const Profile& profile, const Device& device,
                                             std::int64_t batch) {
  report::Prediction out;
  const auto& setup = setup_for(profile, device);
  if (!setup.error.empty()) {
    out.error = setup.error;
    return out;
  }
  try {
    auto options = setup.options;
    const auto& model = model_at(batch, setup.import_rules);
    // An ONNX graph is read with the batch in its shapes: one pass of it is the whole batch.
    options.batch = onnx_ ? 1 : batch;
    const auto e = estimate::estimate(model, setup.runtime_view ? *setup.runtime_view : device,
                                      options);
    out.latency_s = e.latency_s;
    out.naive_latency_s = e.naive_latency_s;
    if (e.decode) {
      out.decode_s = e.decode->time_s;
      out.naive_decode_s = e.decode->naive_s;
    }
    out.fits = e.memory.fits;
    if (workload_.decoder) {
      // The KV cache is largest at the request's last token.
      auto last = options;
      last.context = *workload_.seq + workload_.output_tokens;
      out.fits = estimate::estimate_memory(model, last, e.memory.device_bytes).fits;
    }
  } catch (const InputError& error) {
    // One device lacking a figure (a CPU without bf16), or a batch too large to count, must not
    // hide the others' results.
    out.error = error.what();
  }
  return out;
}

report::Predictor ServingEstimator::predictor() {
  return [this](const Profile& profile, const Device& device, std::int64_t batch) {
    return predict(profile, device, batch);
  };
}

}  // namespace truepeak::cli
