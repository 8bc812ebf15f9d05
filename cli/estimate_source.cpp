// Reading the model `truepeak estimate` was given: its warnings and the sizes it assumed.
#include "cli/estimate_source.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "core/error.hpp"
#ifdef TRUEPEAK_HAVE_ONNX
#include "estimate/onnx_import.hpp"
#endif

namespace truepeak::cli {

ModelSource::ModelSource(const EstimateArgs& args) : args_(args) {
#ifdef TRUEPEAK_HAVE_ONNX
  if (estimate::is_onnx_path(args.model)) {
    onnx_ = true;
    return;
  }
#else
  if (args.model.size() > 5 && args.model.substr(args.model.size() - 5) == ".onnx")
    throw InputError(fmt::format(
        "{}: this truepeak was built without ONNX support (TRUEPEAK_ENABLE_ONNX)", args.model));
#endif
  model_ = estimate::load_model(args.model);
  // What the reader accepted but could only guess at (an elementwise function it does not
  // know, costed as a generic one).
  for (const auto& w : model_->warnings) std::cerr << "truepeak: " << args.model << ": " << w << "\n";
}

const estimate::Model& ModelSource::get(std::int64_t batch) {
#ifdef TRUEPEAK_HAVE_ONNX
  if (onnx_ && (!model_ || batch != batch_)) {
    estimate::OnnxOptions o;
    o.batch = batch;
    // Without --batch, a batch that --input-shape fixes is the graph's batch; a sweep asks for
    // each of its batches.
    o.batch_is_default = args_.batches.empty() && !args_.sweep;
    if (args_.seq > 0) o.seq = args_.seq;
    if (args_.context > 0) o.context = args_.context;
    for (const auto& text : args_.input_shapes) o.input_shapes.push_back(estimate::parse_input_shape(text));
    o.rules = args_.import_rules;
    if (args_.data_dependent_size_given) o.data_dependent_size = args_.data_dependent_size;
    auto imported = estimate::load_onnx(args_.model, o);
    assumption_lines_ = estimate::assumption_lines(imported.assumptions);
    assumptions_ = nlohmann::json::array();
    for (const auto& a : imported.assumptions)
      assumptions_.push_back({{"node", a.node},
                              {"op_type", a.op_type},
                              {"what", a.what},
                              {"assumed", a.assumed},
                              {"at_most", a.at_most ? nlohmann::json(*a.at_most) : nlohmann::json(nullptr)},
                              {"copies", a.copies},
                              {"text", a.text}});
    if (!warned_) {
      // A table or markdown carries the assumptions under its header; JSON in `assumptions`,
      // and its reader takes stderr as the warnings.
      const bool in_output = args_.format != "json";
      for (const auto& w : imported.warnings) {
        if (in_output && std::find(assumption_lines_.begin(), assumption_lines_.end(), w) !=
                             assumption_lines_.end())
          continue;
        std::cerr << "truepeak: " << args_.model << ": " << w << "\n";
      }
      // What the import folded, for a reader of the table (a JSON reader takes stderr as warnings).
      if (!imported.fusions.empty() && args_.format != "json")
        std::cerr << "truepeak: " << args_.model << ": " << imported.onnx_nodes
                  << " ONNX nodes; fused as an inference runtime does: " << estimate::count_list(imported.fusions)
                  << "\n";
      warned_ = true;
    }
    model_ = std::move(imported.model);
    batch_ = batch;
    bound_batch_ = imported.batch.value_or(batch);
  }
#else
  (void)batch;
#endif
  return *model_;
}

void ModelSource::describe_assumptions(estimate::PrintContext& ctx) const {
  if (!onnx_) return;
  ctx.assumption_lines = assumption_lines_;
  ctx.assumptions = assumptions_;
}

estimate::Estimate ModelSource::relabel(estimate::Estimate est, std::int64_t batch) const {
  if (onnx_) {
    batch = bound_batch_;
    est.throughput_per_s *= static_cast<double>(batch);
  }
  est.batch = batch;
  return est;
}

}  // namespace truepeak::cli
