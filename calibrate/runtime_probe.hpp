// `calibrate --runtime`: runs each runtime's probes (runtimes/, Python) as a child process in the
// user's interpreter, checks the record it prints and stores it under its device in the profile.
// The contract with the probes: docs/runtimes.md.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/profile.hpp"

namespace truepeak {

// ---- which runtimes ------------------------------------------------------------------------

// The runtimes the probes know, in the order of docs/runtimes.md.
const std::vector<std::string>& runtime_names();

// One `--runtime NAME[:LABEL]` item. The label tells two calibrations of one runtime apart (two
// versions of a framework in one profile).
struct RuntimeRequest {
  std::string name;
  std::string label;
  std::string key() const { return label.empty() ? name : name + ":" + label; }
  // A label that names a dtype (f32, bf16, f16) asks the runtime to run in it ("" otherwise):
  // torch-eager:bf16 is eager PyTorch on a model converted to bf16.
  std::string dtype() const;
};

// "torch-jit,onnxruntime:ort117". Throws InputError on an unknown name (listing the known ones),
// a bad label or a key given twice.
std::vector<RuntimeRequest> parse_runtime_list(const std::string& text);

// The device kinds ("cpu", "gpu") a runtime runs on.
std::vector<std::string> runtime_device_kinds(const std::string& name);
// The Python module a runtime's probes import: "torch" or "onnxruntime".
std::string runtime_framework_module(const std::string& name);

// ---- where the probes and the interpreter are ---------------------------------------------

// The truepeak source tree this executable was built from (the default home of runtimes/ and
// .venv/).
std::string truepeak_source_dir();

// The folder that goes on PYTHONPATH, the one holding the `runtimes` package:
// $TRUEPEAK_RUNTIMES_DIR (the package's parent, or the package folder itself), else the source
// tree.
std::string runtimes_python_path();

// Throws InputError when `python_path` holds no `runtimes` package.
void check_runtimes_package(const std::string& python_path);

// The interpreter for `runtime`: `given` (searched on PATH when it has no '/'), else
// `source_dir`/.venv/bin/python where it has the runtime's framework (found by
// importlib.util.find_spec, not imported), else /usr/bin/python3.
// Throws InputError when `given` (or, without it, /usr/bin/python3) is not an executable file.
std::string choose_python(const std::string& given, const std::string& runtime,
                          const std::string& source_dir);

// ---- the child process ---------------------------------------------------------------------

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0]: the program, a path
  std::vector<std::string> env;   // the whole environment, NAME=VALUE
  std::string cwd;                // the child's working directory; empty: the parent's
  double timeout_s = 0;           // 0: no limit
  std::size_t max_stdout_bytes = 16u << 20;
  // Raised (Ctrl-C) to end the child early.
  const std::atomic<bool>* stop = nullptr;
  // The child's stderr, each chunk as it arrives (progress); empty: dropped.
  std::function<void(std::string_view)> on_stderr;
};

struct ChildResult {
  enum class End { exited, signalled, timed_out, stopped, output_too_large, not_started };
  End end = End::not_started;
  int exit_status = 0;  // End::exited
  int signal = 0;       // End::signalled
  std::string out;      // stdout, at most max_stdout_bytes
  std::string last_stderr_line;
  std::string error;  // End::not_started: why
};

// Runs the program without a shell, in a process group of its own (a terminal's Ctrl-C reaches
// truepeak, which ends the child; the child dies with truepeak), stdin from /dev/null. Past the
// timeout, on `stop` or on too much output the whole group gets SIGTERM, then SIGKILL.
ChildResult run_child(const ChildSpec& spec);

// The current environment with NAME set to `value` (or `value`:old value with `prepend`).
std::vector<std::string> environment_with(const std::string& name, const std::string& value,
                                          bool prepend);

// ---- one probe -----------------------------------------------------------------------------

struct RuntimeProbeOptions {
  std::string python;       // the interpreter, a path
  std::string python_path;  // prepended to PYTHONPATH
  std::string device_id;    // "cpu", "cuda:0"
  int threads = 1;
  bool quick = false;
  // The libraries the profile measured the device with (name -> version), passed as --library
  // NAME=VERSION: a runtime that bundles another version measures its own kernels' rates.
  std::map<std::string, std::string> libraries;
  double timeout_s = 3600;
  std::size_t max_output_bytes = 16u << 20;
  const std::atomic<bool>* stop = nullptr;
  std::function<void(std::string_view)> on_stderr;
};

struct ProbeOutcome {
  enum class Status { measured, interrupted, framework_missing, failed };
  Status status = Status::failed;
  std::optional<RuntimeRecord> record;  // Status::measured
  std::string message;                  // one line, for the others
};

// Runs `PYTHON -m runtimes --runtime NAME --device DEV --threads N [--dtype D] [--quick]
// [--library NAME=VERSION ...]`, reads the record
// from its stdout, records the interpreter in it, checks it against the profile schema and that
// it is the runtime and device asked for. Never throws for what the child does.
ProbeOutcome run_runtime_probe(const RuntimeRequest& request, const RuntimeProbeOptions& options);

// ---- all of them ---------------------------------------------------------------------------

struct PlannedProbe {
  RuntimeRequest request;
  std::string device_id;
  std::string python;
};

// One probe per runtime and device of `device_ids` it runs on, with its interpreter. Throws
// InputError when a runtime runs on none of them, or on a bad --python.
std::vector<PlannedProbe> plan_runtime_probes(const std::vector<RuntimeRequest>& requests,
                                              const std::vector<std::string>& device_ids,
                                              const std::string& given_python);

struct RuntimeRunOptions {
  std::string python_path;
  int threads = 0;  // 0: the device's threads, else the machine's cores
  bool quick = false;
  std::optional<double> timeout_s;  // default: 20 min quick, 60 min full
  const std::atomic<bool>* stop = nullptr;
  std::function<void(const std::string&)> progress;
  std::function<void(std::string_view)> on_stderr;
};

struct RuntimeRunSummary {
  std::vector<std::string> measured;   // "torch-jit on cpu"
  std::vector<std::string> failures;   // one line each
  bool framework_missing_only = true;  // every failure was a missing or too old framework
  bool interrupted = false;
};

// Runs the planned probes in order and stores each record under its device in `profile`
// (replacing a record of the same key). A failure does not stop the others; Ctrl-C does.
RuntimeRunSummary run_runtime_probes(Profile& profile, const std::vector<PlannedProbe>& plan,
                                     const RuntimeRunOptions& options);

}  // namespace truepeak
