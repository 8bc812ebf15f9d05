// What `compare --model` and `plan` share on the command line: the model and how it runs
// (--dtype, --runtime, --seq, --context, --output-tokens), checked against the model, and the
// estimator on each device of the profiles as the report's Predictor.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/profile.hpp"
#include "estimate/estimator.hpp"
#include "estimate/onnx_import.hpp"
#include "report/serving.hpp"

namespace truepeak::cli {

struct WorkloadArgs {
  std::string model;
  std::string dtype = "f32";
  std::string runtime;  // a runtime record of each profile's device (calibrate --runtime)
  std::int64_t seq = 0;
  std::int64_t context = 0;
  std::int64_t output_tokens = 128;
  // Which of the numeric flags were given: a given value out of range is an error, not a default.
  bool seq_given = false, context_given = false, output_tokens_given = false;
};

// Registers --dtype, --runtime, --seq, --context and --output-tokens (each command registers its
// own --model, which says what the model is for there).
void add_workload_options(CLI::App& cmd, WorkloadArgs& args);
// Records which of those flags the command line gave; call it in the command's callback.
void note_given_workload_options(const CLI::App& cmd, WorkloadArgs& args);
// The workload flags given without --model, named: "--seq" (empty when none was given).
std::string workload_flag_given(const CLI::App& cmd);

// `value` when it is finite and above 0; else InputError "FLAG VALUE: expected EXPECTED".
double positive_figure(double value, const std::string& flag, const std::string& expected);

// Throws InputError unless --format is one the serving tables print: table, md or json.
void check_table_format(const std::string& format);

// The model, read once (an ONNX graph once per batch it is asked at: its shapes hold the batch),
// and the estimator over it on any device of `profiles`.
class ServingEstimator {
 public:
  // Loads the model (an ONNX graph at `first_batch`) and checks the workload flags against it.
  // Throws InputError.
  ServingEstimator(const WorkloadArgs& args, const std::vector<Profile>& profiles,
                   const std::vector<std::string>& paths, std::int64_t first_batch);
  const report::Workload& workload() const { return workload_; }
  // The estimator on a device of one of the profiles; refers to this object.
  report::Predictor predictor();

 private:
  struct DeviceSetup {
    estimate::Options options;
    std::optional<Device> runtime_view;  // the device as the runtime sees it
    estimate::ImportRules import_rules;  // ONNX: what the runtime folds of the graph
    std::string error;                   // the device cannot run the workload (no such runtime)
  };
  const DeviceSetup& setup_for(const Profile& profile, const Device& device);
  const estimate::Model& model_at(std::int64_t batch, const estimate::ImportRules& rules);
  report::Prediction predict(const Profile& profile, const Device& device, std::int64_t batch);

  WorkloadArgs args_;
  const std::vector<Profile>& profiles_;
  std::vector<std::string> paths_;
  report::Workload workload_;
  estimate::Options base_;
  bool onnx_ = false;
  estimate::Model model_;  // a zoo or JSON model; ONNX: the graph at the first batch asked
  std::map<std::pair<std::int64_t, estimate::ImportRules>, std::unique_ptr<estimate::Model>> onnx_models_;
  std::map<const Device*, DeviceSetup> setups_;
};

}  // namespace truepeak::cli
