// `truepeak estimate`: predict a model's latency, throughput and memory from a profile.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/estimate_source.hpp"
#include "core/error.hpp"
#include "core/profile.hpp"
#include "estimate/estimator.hpp"
#include "estimate/print.hpp"
#include "estimate/runtime_apply.hpp"
#include "estimate/zoo_data.hpp"
#ifdef TRUEPEAK_HAVE_ONNX
#include "estimate/onnx_import.hpp"  // kDataDependentSize
#endif

namespace truepeak::cli {
namespace {


Profile load_profile(const std::string& path, std::string& shown_path) {
  if (!path.empty()) {
    shown_path = path;
    return load_profile_file(path);
  }
  const auto text = estimate::default_profile_text();
  if (!text)
    throw InputError(fmt::format(
        "no --profile given and no default profile was built in ({} did not exist when the "
        "build was configured): run 'truepeak calibrate' and pass --profile FILE",
        estimate::default_profile_path()));
  shown_path = std::string(estimate::default_profile_path()) + " (built in)";
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", shown_path, e.what()));
  }
  return with_current_datasheets(profile_from_json(doc, shown_path));
}

const Device& pick_device(const Profile& profile, const std::string& id, const std::string& where) {
  if (profile.devices.empty())
    throw InputError(fmt::format("{}: the profile has no devices", where));
  if (id.empty()) return profile.devices.front();
  if (const auto* d = profile.find_device(id)) return *d;
  std::string ids;
  for (const auto& d : profile.devices) ids += (ids.empty() ? "" : ", ") + d.id;
  throw InputError(fmt::format("--device {}: not in {} (it has: {})", id, where, ids));
}

estimate::Format parse_format(const std::string& text) {
  if (text == "table") return estimate::Format::table;
  if (text == "md" || text == "markdown") return estimate::Format::markdown;
  if (text == "json") return estimate::Format::json;
  throw InputError(fmt::format("--format {}: expected table, json or md", text));
}

bool is_row_kind(const std::string& kind) {
  return !kind.empty() && kind.back() != ':' &&
         estimate::parse_op_kind(kind.substr(0, kind.find(':'))).has_value();
}

// KIND=NUMBER with a row kind and a finite number, all of it; nullopt otherwise.
std::optional<std::pair<std::string, double>> kind_and_number(const std::string& item) {
  const auto eq = item.find('=');
  if (eq == std::string::npos || !is_row_kind(item.substr(0, eq))) return std::nullopt;
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(item.substr(eq + 1), &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used == 0 || used != item.size() - eq - 1 || !std::isfinite(value)) return std::nullopt;
  return std::pair{item.substr(0, eq), value};
}

// --own-rates KIND=ELEMENTS_PER_S,...
estimate::OwnRates own_rates(const std::vector<std::string>& items) {
  estimate::OwnRates rates;
  for (const auto& item : items) {
    const auto parsed = kind_and_number(item);
    if (!parsed || !(parsed->second > 0))
      throw InputError(fmt::format(
          "--own-rates {}: expected KIND=ELEMENTS_PER_S with a row kind and a positive rate "
          "(e.g. pool:max=5e7)",
          item));
    const auto& [kind, rate] = *parsed;
    // Only the ops of the vector engine run in a runtime's own kernels here.
    using estimate::OpKind;
    const auto base = *estimate::parse_op_kind(kind.substr(0, kind.find(':')));
    if (base != OpKind::elementwise && base != OpKind::norm && base != OpKind::softmax &&
        base != OpKind::pool && base != OpKind::concat && base != OpKind::transpose &&
        kind != estimate::kBiasFillKind && kind != estimate::kConvBiasKind && kind != "matmul")
      throw InputError(fmt::format(
          "--own-rates {}: only elementwise, norm, softmax, pool, concat and transpose kinds, "
          "{} (a linear's bias copied into its output), {} (a convolution's bias added to its "
          "output) and matmul (FLOPs per second of the products between activations), take a "
          "rate of their own",
          item, estimate::kBiasFillKind, estimate::kConvBiasKind));
    if (std::any_of(rates.begin(), rates.end(), [&](const auto& r) { return r.first == kind; }))
      throw InputError(fmt::format("--own-rates {}: {} is given twice", item, kind));
    rates.emplace_back(kind, rate);
  }
  return rates;
}

// --kind-overhead-us KIND=MICROSECONDS,... (seconds in the result)
estimate::OwnRates kind_overheads(const std::vector<std::string>& items) {
  estimate::OwnRates out;
  for (const auto& item : items) {
    const auto parsed = kind_and_number(item);
    if (!parsed || !(parsed->second >= 0))
      throw InputError(fmt::format(
          "--kind-overhead-us {}: expected KIND=MICROSECONDS with an op kind and 0 or more "
          "microseconds (e.g. linear=20)",
          item));
    const auto& [kind, us] = *parsed;
    if (std::any_of(out.begin(), out.end(), [&](const auto& r) { return r.first == kind; }))
      throw InputError(fmt::format("--kind-overhead-us {}: {} is given twice", item, kind));
    out.emplace_back(kind, us * 1e-6);
  }
  return out;
}

// `text` as a whole number, all of it; nullopt when it is not one (or out of range).
std::optional<std::int64_t> whole_number(const std::string& text) {
  std::size_t used = 0;
  std::int64_t n = 0;
  try {
    n = std::stoll(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used == 0 || used != text.size()) return std::nullopt;
  return n;
}

// --blocked-ops KIND,... and --layout-copies TO_PLAIN,TO_BLOCKED, over a runtime's layout where
// one is applied: each flag given replaces its figure.
estimate::BlockedLayout blocked_layout(const EstimateArgs& args, const std::optional<estimate::BlockedLayout>& base) {
  estimate::BlockedLayout layout = base.value_or(estimate::BlockedLayout{});
  if (!args.blocked_ops.empty()) layout.ops.clear();
  for (const auto& kind : args.blocked_ops) {
    if (!is_row_kind(kind))
      throw InputError(fmt::format(
          "--blocked-ops {}: not an op kind (expected a row kind such as conv2d, elementwise:relu, "
          "pool:max or pool)",
          kind));
    layout.ops.push_back(kind);
  }
  if (args.expand_broadcast) layout.expand_broadcast = true;
  if (!args.group_reorders.empty()) layout.group_reorder_widths.clear();
  for (const auto& item : args.group_reorders) {
    const auto width = whole_number(item);
    if (!width || *width < 2)
      throw InputError(fmt::format(
          "--group-reorders {}: expected channels per group, whole numbers of 2 or more (e.g. 2,4,8)", item));
    auto& widths = layout.group_reorder_widths;
    if (std::find(widths.begin(), widths.end(), *width) != widths.end())
      throw InputError(fmt::format("--group-reorders {}: given twice", item));
    widths.push_back(*width);
  }
  if (base && !args.layout_copies) return layout;
  const std::string copies = args.layout_copies.value_or("1,1");
  const auto bad = [&] {
    return InputError(fmt::format(
        "--layout-copies {}: expected two counts from 0 to 8, TO_PLAIN,TO_BLOCKED (e.g. 1,2)", copies));
  };
  const auto count = [&](const std::string& text) {
    const auto n = whole_number(text);
    if (!n || *n < 0 || *n > 8) throw bad();
    return static_cast<int>(*n);
  };
  const auto comma = copies.find(',');
  if (comma == std::string::npos) throw bad();
  layout.to_plain_copies = count(copies.substr(0, comma));
  layout.to_blocked_copies = count(copies.substr(comma + 1));
  return layout;
}

void run_estimate(const EstimateArgs& args) {
  estimate::Options options;
  const auto dtype = parse_dtype(args.dtype.empty() ? "f32" : args.dtype);
  if (!dtype)
    throw InputError(fmt::format("--dtype {}: expected f32, bf16, f16, int8 or fp8", args.dtype));
  options.dtype = *dtype;
  const auto mode = estimate::parse_mode(args.mode);
  if (!mode) throw InputError(fmt::format("--mode {}: expected inference or training", args.mode));
  options.mode = *mode;
  const auto optimizer = estimate::parse_optimizer(args.optimizer);
  if (!optimizer)
    throw InputError(
        fmt::format("--optimizer {}: expected sgd, momentum, adam or adamw", args.optimizer));
  options.optimizer = *optimizer;
  if (args.seq_given && args.seq < 1)
    throw InputError(fmt::format("--seq {}: a sequence length is at least 1 token", args.seq));
  if (args.context_given && args.context < 1)
    throw InputError(fmt::format("--context {}: a context length is at least 1 token", args.context));
  if (args.max_latency_given && !(std::isfinite(args.max_latency_ms) && args.max_latency_ms > 0))
    throw InputError(fmt::format("--max-latency-ms {}: expected a time above 0 ms", args.max_latency_ms));
  if (args.data_dependent_size_given && args.data_dependent_size < 1)
    throw InputError(fmt::format("--data-dependent-size {}: a size is at least 1", args.data_dependent_size));
  if (args.max_latency_given && !args.sweep)
    throw InputError("--max-latency-ms: applies with --sweep-batch only");
  if (args.seq > 0) options.seq = args.seq;
  if (args.context > 0) options.context = args.context;
  if (!args.conv_layout.empty() && args.conv_layout != "nchw" && args.conv_layout != "nhwc" &&
      args.conv_layout != "blocked")
    throw InputError(
        fmt::format("--conv-layout {}: expected nchw, nhwc or blocked", args.conv_layout));
  options.conv_layout = args.conv_layout;
  options.typical_times = args.typical_times;
  if (args.op_overhead_us) {
    if (!(*args.op_overhead_us >= 0))
      throw InputError(fmt::format("--op-overhead-us {}: must be 0 or more microseconds",
                                   *args.op_overhead_us));
    options.op_overhead_s = *args.op_overhead_us * 1e-6;
  }
  // `flag` (as given) when it is, and what it needs.
  const auto inference_only = [&](bool given, const std::string& flag) {
    if (given && options.mode != estimate::Mode::inference)
      throw InputError(fmt::format("{}: modelled for inference only (--mode inference)", flag));
  };
  const auto flag_own_rates = own_rates(args.own_rates);
  const auto flag_kind_overheads = kind_overheads(args.kind_overheads);
  inference_only(!flag_kind_overheads.empty(),
                 fmt::format("--kind-overhead-us {}", fmt::join(args.kind_overheads, ",")));
  inference_only(!flag_own_rates.empty(), fmt::format("--own-rates {}", fmt::join(args.own_rates, ",")));
  inference_only(args.linears_as_convs, "--linears-as-convs");
  for (const auto& kind : args.in_place_ops) {
    const bool elementwise = kind == "elementwise" || (kind.rfind("elementwise:", 0) == 0 && is_row_kind(kind));
    if (!elementwise)
      throw InputError(fmt::format(
          "--in-place-ops {}: expected elementwise or an elementwise row kind (e.g. elementwise:relu)",
          kind));
  }
  inference_only(!args.in_place_ops.empty(), fmt::format("--in-place-ops {}", fmt::join(args.in_place_ops, ",")));
  if (!args.blocked_ops.empty() && options.mode != estimate::Mode::inference)
    throw InputError("--blocked-ops: layout changes are modelled for inference only (--mode inference)");
  const auto format = parse_format(args.format);
  for (auto b : args.batches)
    if (b < 1) throw InputError(fmt::format("--batch {}: batch sizes must be at least 1", b));

  estimate::PrintContext ctx;
  const Profile profile = load_profile(args.profile, ctx.profile_path);
  ctx.profile_label = profile.machine.label;
  const Device& profile_device = pick_device(profile, args.device, ctx.profile_path);
  if (const auto bytes = estimate::device_memory_bytes(profile, profile_device))
    options.memory_bytes = static_cast<std::int64_t>(*bytes);

  // A runtime's figures first; the expert flags then override single figures.
  const RuntimeRecord* record = nullptr;
  Device runtime_view;
  if (!args.runtime.empty()) {
    const std::string file = args.profile.empty() ? std::string(estimate::default_profile_path()) : args.profile;
    record = &estimate::find_runtime(profile_device, args.runtime, file);
    // A runtime runs the model in the dtype it was calibrated for unless --dtype says otherwise.
    if (args.dtype.empty() && !record->dtypes.empty()) options.dtype = record->dtypes.front();
    for (const auto& note : estimate::apply_runtime(*record, args.runtime, options))
      std::cerr << "truepeak: " << note << "\n";
    runtime_view = estimate::runtime_device(profile_device, *record);
    ctx.runtime = args.runtime;
  }
  const Device& device = record ? runtime_view : profile_device;
  if (args.op_overhead_us) options.op_overhead_s = *args.op_overhead_us * 1e-6;
  estimate::override_rates(options.own_rates, flag_own_rates);
  estimate::override_rates(options.kind_overheads, flag_kind_overheads);
  if (args.linears_as_convs) options.linears_as_convolutions = true;
  if (!args.in_place_ops.empty()) options.in_place_ops = args.in_place_ops;
  if (!args.conv_layout.empty()) options.conv_layout = args.conv_layout;
  const bool has_layout = !args.blocked_ops.empty() || options.blocked_layout.has_value();
  const auto needs_layout = [&](bool given, const std::string& flag) {
    if (given && !has_layout)
      throw InputError(fmt::format("{}: has no effect without --blocked-ops", flag));
  };
  needs_layout(args.layout_copies.has_value(), "--layout-copies " + args.layout_copies.value_or(""));
  needs_layout(args.expand_broadcast, "--expand-broadcast");
  needs_layout(!args.group_reorders.empty(), fmt::format("--group-reorders {}", fmt::join(args.group_reorders, ",")));
  if (has_layout) options.blocked_layout = blocked_layout(args, options.blocked_layout);
  EstimateArgs model_args = args;
  if (record) model_args.import_rules = estimate::import_rules(*record);
  model_args.import_rules.fuse_activations |= args.fuse_activations;

  ModelSource source(model_args);
  if (args.sweep) {
    std::vector<std::int64_t> batches = args.batches;
    if (batches.size() <= 1)
      for (std::int64_t b = 1; b <= 128; ++b) batches.push_back(b);
    std::optional<double> limit;
    if (args.max_latency_ms > 0) limit = args.max_latency_ms / 1e3;
    estimate::Sweep sweep;
    if (source.is_onnx()) {
      // The graph is bound to one batch when read: read it per batch size.
      estimate::Options o = options;
      o.per_op_rows = false;
      sweep.max_latency_s = limit;
      for (const auto b : batches) {
        o.batch = 1;
        sweep.rows.push_back(source.relabel(estimate::estimate(source.get(b), device, o), b));
      }
      sweep.best = estimate::best_of(sweep.rows, limit);
      source.describe_assumptions(ctx);
    } else {
      sweep = estimate::sweep_batch(source.get(1), device, options, batches, limit);
    }
    std::cout << estimate::format_sweep(sweep, ctx, format);
    return;
  }
  std::vector<std::int64_t> batches =
      args.batches.empty() ? std::vector<std::int64_t>{1} : args.batches;
  nlohmann::json all = nlohmann::json::array();
  for (std::size_t i = 0; i < batches.size(); ++i) {
    const auto& model = source.get(batches[i]);
    options.batch = source.graph_batch(batches[i]);
    auto est = source.relabel(estimate::estimate(model, device, options), batches[i]);
    // A graph bound to one batch cannot say which batch would fit.
    source.describe_assumptions(ctx);
    ctx.max_batch = source.is_onnx() ? std::nullopt
                                     : estimate::max_batch(model, options, est.memory.device_bytes);
    if (format == estimate::Format::json) {
      all.push_back(estimate::estimate_to_json(est, ctx));
    } else {
      if (i) std::cout << "\n";
      std::cout << estimate::format_estimate(est, ctx, format);
    }
  }
  if (format == estimate::Format::json)
    std::cout << (all.size() == 1 ? all[0] : all).dump(2) << "\n";
}

}  // namespace

void add_estimate_command(CLI::App& app, const Context&) {
  auto args = std::make_shared<EstimateArgs>();
  auto* cmd = app.add_subcommand(
      "estimate",
      "Predict a model's latency, throughput and memory on one device of a calibrated profile.\n"
      "Each op costs max(FLOPs / the measured rate for its kind, dtype and shape, bytes / the "
      "measured\n"
      "bandwidth of the memory level holding its working set) + the measured per-op overhead (on "
      "a GPU,\n"
      "which runs an op while the host issues the next: the longer of the two). On a CPU, an "
      "output\n"
      "written where the caches no longer hold it counts twice at main-memory bandwidth (the line "
      "is\n"
      "read first). The naive roofline (same FLOPs and bytes over datasheet peaks) is printed "
      "beside\n"
      "every figure.");
  cmd->add_option(
      "--profile", args->profile,
      "Profile written by 'truepeak calibrate' (default: the development machine's, built in; see docs/estimator.md)");
  cmd->add_option("--model", args->model,
                  "Zoo model name (see 'truepeak models'), a model JSON file (models/README.md) or "
                  "an .onnx file")
      ->required();
  cmd->add_option("--batch", args->batches, "Batch sizes, comma separated (default 1)")
      ->delimiter(',')
      ->check(CLI::Validator(
          [](const std::string& text) {
            return text.empty() ? std::string("an empty batch size; give whole numbers such as 1,8")
                                : std::string();
          },
          "BATCHES"));
  cmd->add_option("--dtype", args->dtype,
                  "Data type of weights and activations: f32, bf16, f16, int8, fp8 (default: the "
                  "--runtime's own dtype, else f32)");
  cmd->add_option("--mode", args->mode,
                  "inference (decoders: prefill and per-token decode) or training (forward, "
                  "backward, optimizer)")
      ->capture_default_str();
  cmd->add_option("--optimizer", args->optimizer, "Training optimizer: sgd, momentum, adam, adamw")
      ->capture_default_str();
  cmd->add_option("--seq", args->seq,
                  "Sequence length S (prompt length for decoders; default from the model)");
  cmd->add_option("--context", args->context,
                  "Context length T of the decode step (default: --seq)");
  cmd->add_option("--device", args->device,
                  "Device of the profile: cpu, cuda:0, ... (default: the first)");
  cmd->add_option(
      "--conv-layout", args->conv_layout,
      "Use only convolution points of this layout (nchw, nhwc, blocked) as the target runtime does "
      "(default: the fastest layout measured at each shape)");
  cmd->add_flag("--typical-times", args->typical_times,
                "Time each op from the typical time of the profile's points (the median of each "
                "point's quietest look, profiles since 1.8) instead of their fastest sample");
  cmd->add_option("--runtime", args->runtime,
                  "Apply a runtime the profile has calibrated (calibrate --runtime NAME[:LABEL]): its "
                  "per-op and per-kind costs, own kernels, layout, in-place ops, fusions, memory and "
                  "GEMM/conv points (docs/runtimes.md); the flags below still override single figures "
                  "(default: the library alone)");
  cmd->add_option("--op-overhead-us", args->op_overhead_us,
                  "Fixed cost of one op in the target runtime, framework dispatch included, in "
                  "microseconds (default: the profile's per-op overhead, the library's alone)");
  cmd->add_option("--kind-overhead-us", args->kind_overheads,
                  "Fixed cost of one op of these kinds in the target runtime, KIND=US,... (e.g. "
                  "linear=20,matmul=20), in place of --op-overhead-us for them: a framework whose "
                  "dispatch of a library product costs more than that of its other ops "
                  "(inference); reshape=US: each view (reshape, split, slice, ...), free "
                  "otherwise, costs that much, as an eager framework dispatches it")
      ->delimiter(',');
  cmd->add_option(
         "--blocked-ops", args->blocked_ops,
         "The target runtime keeps 4-D activations in oneDNN's channel-blocked layout: "
         "convolutions, and these op kinds when all their 4-D inputs are blocked (e.g. "
         "elementwise:relu,elementwise:add,pool); every other op runs plain, and each layout "
         "change costs a reorder (inference; default: no layout changes)")
      ->delimiter(',');
  cmd->add_option("--layout-copies", args->layout_copies,
                  "With --blocked-ops: copies one layout change makes, TO_PLAIN,TO_BLOCKED (a "
                  "runtime that copies a tensor into its own before reordering it makes 2; "
                  "default 1,1)");
  cmd->add_option("--own-rates", args->own_rates,
                  "Elements per second of the runtime's own kernels, KIND=RATE,... (e.g. "
                  "pool:max=4e8,elementwise:gelu_tanh=2.6e8), for the ops of those kinds that run "
                  "outside the profile's library: all of them, or with --blocked-ops those that "
                  "run plain; an op's elements are its outputs, a pool's its window elements "
                  "(inference; default: the profile's figures); linear:bias=RATE: the runtime "
                  "copies each linear's bias into its output before the product, at RATE output "
                  "elements per second; conv2d:bias=RATE: the runtime adds each convolution's "
                  "bias to its output after the product, in an op of its own, at RATE output "
                  "elements per second; matmul=RATE: the products between two activations run "
                  "in the runtime's own kernels at RATE FLOPs per second")
      ->delimiter(',');
  cmd->add_flag("--expand-broadcast", args->expand_broadcast,
                "With --blocked-ops: a blocked elementwise op expands a broadcast 4-D operand to "
                "its output's shape and reorders that to blocked (PyTorch's oneDNN multiply)");
  cmd->add_option("--group-reorders", args->group_reorders,
                  "With --blocked-ops: grouped convolutions (not depthwise) with this many channels "
                  "per group, W,... (e.g. 2,4,8), run in a layout of their own: a reorder of their "
                  "input there and of their output back, every time (oneDNN's aBcd4b / aBcd8b)")
      ->delimiter(',');
  cmd->add_flag("--linears-as-convs", args->linears_as_convs,
                "The target runtime runs linear layers as 1x1 convolutions (or the library's inner "
                "product), not as matmuls: they take the profile's convolution points (inference)");
  cmd->add_option("--in-place-ops", args->in_place_ops,
                  "The target runtime runs these elementwise kinds in place, KIND,... (e.g. "
                  "elementwise:relu,elementwise:add, or elementwise for all): the output over an "
                  "input of its size that no other op reads; such an op costs its reads twice at "
                  "the profile's in-place bandwidth (profiles since 1.10; inference; default: none)")
      ->delimiter(',');
  cmd->add_option("--input-shape", args->input_shapes,
                  "ONNX: the shape of a graph input, NAME=1x3x224x224 (repeatable); wins over --batch/--seq");
#ifdef TRUEPEAK_HAVE_ONNX
  cmd->add_option("--data-dependent-size", args->data_dependent_size,
                  fmt::format("ONNX: the size taken for each dimension the graph computes from its "
                              "data (boxes NonMaxSuppression keeps, elements NonZero finds, a TopK's "
                              "k or a Loop's trip count read from values), capped by what the op's "
                              "inputs allow; each is listed under 'assumed' (JSON: assumptions) "
                              "(default {})",
                              estimate::kDataDependentSize));
#endif
  cmd->add_flag("--fuse-activations", args->fuse_activations,
                "ONNX: fold an activation that follows a GEMM/convolution into it (as inference runtimes do)");
  cmd->add_option("--format", args->format, "Output: table, json or md")->capture_default_str();
  cmd->add_flag("--sweep-batch", args->sweep,
                "Sweep batch sizes (the --batch list, default 1..128): throughput, latency and "
                "memory per batch, "
                "and the best throughput that fits");
  cmd->add_option("--max-latency-ms", args->max_latency_ms,
                  "With --sweep-batch: latency limit in ms (decoders: time per output token)");
  cmd->callback([args, cmd] {
    args->seq_given = cmd->count("--seq") > 0;
    args->context_given = cmd->count("--context") > 0;
    args->max_latency_given = cmd->count("--max-latency-ms") > 0;
    args->data_dependent_size_given = cmd->count("--data-dependent-size") > 0;
    run_estimate(*args);
  });
}

}  // namespace truepeak::cli
