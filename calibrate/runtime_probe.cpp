#include "calibrate/runtime_probe.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "core/error.hpp"
#include "core/schema_check.hpp"
#include "truepeak/source_dir.hpp"

extern char** environ;

namespace truepeak {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

// How long a child gets between SIGTERM and SIGKILL, and how long its pipes may stay open after
// it exited (a grandchild holding them).
constexpr double kTermGrace_s = 2.0;
constexpr double kPipeGrace_s = 1.0;
// What the check that an interpreter has a framework may take: it finds the package without
// importing it, but a cold interpreter on a slow disk still reads its standard library.
constexpr double kImportCheck_s = 60.0;
// Stderr kept to find its last line.
constexpr std::size_t kStderrTail = 8192;

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The last line with text, as a terminal shows it: a carriage return starts the line anew.
std::string last_line(const std::string& text) {
  std::string last, current;
  const auto keep = [&] {
    const auto first = current.find_first_not_of(" \t");
    if (first != std::string::npos)
      last = current.substr(first, current.find_last_not_of(" \t") - first + 1);
    current.clear();
  };
  for (const char c : text) {
    if (c == '\n' || c == '\r') {
      keep();
    } else {
      current += c;
    }
  }
  keep();
  return last;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::string shell_words(const std::vector<std::string>& argv) {
  return fmt::format("{}", fmt::join(argv, " "));
}

}  // namespace

// ---- which runtimes ------------------------------------------------------------------------

const std::vector<std::string>& runtime_names() {
  static const std::vector<std::string> names = {"torch-jit", "torch-eager", "torch-compile",
                                                 "torch-cudagraph", "onnxruntime"};
  return names;
}

std::string RuntimeRequest::dtype() const {
  return label == "f32" || label == "bf16" || label == "f16" ? label : std::string();
}

std::vector<RuntimeRequest> parse_runtime_list(const std::string& text) {
  std::vector<RuntimeRequest> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    const auto colon = item.find(':');
    RuntimeRequest r{item.substr(0, colon),
                     colon == std::string::npos ? "" : item.substr(colon + 1)};
    const auto& names = runtime_names();
    if (std::find(names.begin(), names.end(), r.name) == names.end())
      throw InputError(fmt::format("--runtime {}: unknown runtime (runtimes: {})", item,
                                   fmt::join(names, ", ")));
    const bool label_ok = std::all_of(r.label.begin(), r.label.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '+' ||
             c == '-';
    });
    if (colon != std::string::npos && (r.label.empty() || !label_ok))
      throw InputError(fmt::format(
          "--runtime {}: a label is letters, digits and _ . + - (e.g. {}:v2)", item, r.name));
    if (std::any_of(out.begin(), out.end(), [&](const auto& o) { return o.key() == r.key(); }))
      throw InputError(fmt::format("--runtime {}: {} is given twice", text, r.key()));
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> runtime_device_kinds(const std::string& name) {
  if (name == "torch-eager" || name == "torch-compile") return {"cpu", "gpu"};
  if (name == "torch-cudagraph") return {"gpu"};
  return {"cpu"};
}

std::string runtime_framework_module(const std::string& name) {
  return name == "onnxruntime" ? "onnxruntime" : "torch";
}

// ---- where the probes and the interpreter are ---------------------------------------------

std::string truepeak_source_dir() { return kTruepeakSourceDir; }

std::string runtimes_python_path() {
  const char* env = std::getenv("TRUEPEAK_RUNTIMES_DIR");
  if (!env || !*env) return truepeak_source_dir();
  std::error_code ec;
  // Absolute: the probes run in this folder, where a relative path would name another.
  fs::path dir = fs::absolute(env, ec);
  if (ec) dir = env;
  // Named as the package folder itself, its parent is what Python searches.
  if (!fs::is_directory(dir / "runtimes", ec) && dir.filename() == "runtimes")
    return dir.parent_path().string();
  return dir.string();
}

void check_runtimes_package(const std::string& python_path) {
  std::error_code ec;
  const fs::path package = fs::path(python_path) / "runtimes";
  if (!fs::is_regular_file(package / "__main__.py", ec))
    throw InputError(
        fmt::format("--runtime: the runtime probes are not at {} (no __main__.py); set "
                    "TRUEPEAK_RUNTIMES_DIR to the folder that holds runtimes/",
                    package.string()));
}

std::string choose_python(const std::string& given, const std::string& runtime,
                          const std::string& source_dir) {
  if (!given.empty()) {
    std::string path = given;
    if (given.find('/') == std::string::npos) {
      path.clear();
      const char* env_path = std::getenv("PATH");
      std::string dirs = env_path ? env_path : "";
      for (std::size_t start = 0; start <= dirs.size();) {
        const auto colon = dirs.find(':', start);
        const std::string dir =
            dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
        start = colon == std::string::npos ? dirs.size() + 1 : colon + 1;
        const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + given;
        if (is_executable_file(candidate)) {
          path = candidate;
          break;
        }
      }
      if (path.empty()) throw InputError(fmt::format("--python {}: not found on PATH", given));
    }
    if (!is_executable_file(path))
      throw InputError(fmt::format("--python {}: not an executable file", given));
    // Absolute, since the probes run in another directory; not resolved through links, since a
    // venv's interpreter is a link that finds its venv by the path it was started by.
    std::error_code ec;
    const auto absolute = fs::absolute(path, ec);
    return ec ? path : absolute.string();
  }
  const std::string venv = source_dir + "/.venv/bin/python";
  if (is_executable_file(venv)) {
    ChildSpec check;
    // Finding the package, not importing it: an import of torch takes seconds, and the runtime's
    // own process says so in one line when an installed framework fails to import.
    check.argv = {venv, "-c",
                  "import importlib.util, sys; sys.exit(importlib.util.find_spec('" +
                      runtime_framework_module(runtime) + "') is None)"};
    for (char** e = environ; e && *e; ++e) check.env.emplace_back(*e);
    check.cwd = "/";  // a folder named after the framework where truepeak started cannot answer
    check.timeout_s = kImportCheck_s;
    if (const auto r = run_child(check); r.end == ChildResult::End::exited && r.exit_status == 0)
      return venv;
  }
  const std::string system = "/usr/bin/python3";
  if (!is_executable_file(system))
    throw InputError(
        fmt::format("--runtime {}: no Python interpreter ({} does not exist): give --python PATH",
                    runtime, system));
  return system;
}

// ---- the child process ---------------------------------------------------------------------

std::vector<std::string> environment_with(const std::string& name, const std::string& value,
                                          bool prepend) {
  std::vector<std::string> env;
  std::string old;
  bool had = false;
  const std::string prefix = name + "=";
  for (char** e = environ; e && *e; ++e) {
    const std::string entry(*e);
    if (entry.rfind(prefix, 0) == 0) {
      old = entry.substr(prefix.size());
      had = true;
      continue;
    }
    env.push_back(entry);
  }
  env.push_back(prefix + (prepend && had && !old.empty() ? value + ":" + old : value));
  return env;
}

ChildResult run_child(const ChildSpec& spec) {
  ChildResult result;
  if (spec.argv.empty()) {
    result.error = "no program";
    return result;
  }
  // Everything the child needs is built before fork: between fork and exec only async-signal-safe
  // calls are allowed (the calibration may have started threads).
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const char* cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();

  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, exec_pipe[2] = {-1, -1};
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    result.error = fmt::format("cannot create pipes: {}", std::strerror(errno));
    for (int* fd :
         {&out_pipe[0], &out_pipe[1], &err_pipe[0], &err_pipe[1], &exec_pipe[0], &exec_pipe[1]})
      if (*fd >= 0) ::close(*fd);
    if (null_fd >= 0) ::close(null_fd);
    return result;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
#ifdef __linux__
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
#endif
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    if (cwd == nullptr || ::chdir(cwd) == 0) ::execve(argv[0], argv.data(), envp.data());
    const int e = errno;
    [[maybe_unused]] const auto n = ::write(exec_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(null_fd);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(exec_pipe[1]);
  if (pid < 0) {
    result.error = fmt::format("cannot start a process: {}", std::strerror(errno));
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    ::close(exec_pipe[0]);
    return result;
  }
  // Set here too: the group must exist before the first kill, whichever process runs first.
  ::setpgid(pid, pid);
  int exec_errno = 0;
  ssize_t got = 0;
  do {
    got = ::read(exec_pipe[0], &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  ::close(exec_pipe[0]);
  if (got == sizeof exec_errno) {
    ::waitpid(pid, nullptr, 0);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    result.error = fmt::format("cannot run {}{}: {}", spec.argv[0],
                               cwd ? fmt::format(" in {}", spec.cwd) : "", std::strerror(exec_errno));
    return result;
  }

  int out_fd = out_pipe[0], err_fd = err_pipe[0];
  std::string err_tail;
  const auto start = Clock::now();
  std::optional<ChildResult::End> ending;  // why the group was told to stop
  std::optional<Clock::time_point> term_sent, reaped_at;
  bool killed = false, reaped = false;
  int status = 0;
  const auto stop_group = [&](ChildResult::End why) {
    if (ending) return;
    ending = why;
    term_sent = Clock::now();
    ::kill(-pid, SIGTERM);
  };
  char buffer[65536];
  while (!reaped || out_fd >= 0 || err_fd >= 0) {
    if (spec.stop && spec.stop->load()) stop_group(ChildResult::End::stopped);
    if (spec.timeout_s > 0 && seconds_since(start) > spec.timeout_s)
      stop_group(ChildResult::End::timed_out);
    if (term_sent && !killed && seconds_since(*term_sent) > kTermGrace_s) {
      ::kill(-pid, SIGKILL);
      killed = true;
    }
    if (reaped && reaped_at && seconds_since(*reaped_at) > kPipeGrace_s) {
      // The child is gone; whatever still holds its pipes belongs to its group.
      ::kill(-pid, SIGKILL);
      close_fd(out_fd);
      close_fd(err_fd);
      break;
    }
    pollfd fds[2];
    nfds_t n = 0;
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
    const int ready = ::poll(n ? fds : nullptr, n, 50);
    if (ready < 0 && errno != EINTR) break;
    for (nfds_t i = 0; ready > 0 && i < n; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t count = ::read(fds[i].fd, buffer, sizeof buffer);
      if (count < 0 && errno == EINTR) continue;
      if (count <= 0) {
        if (fds[i].fd == out_fd)
          close_fd(out_fd);
        else
          close_fd(err_fd);
        continue;
      }
      const std::string_view chunk(buffer, static_cast<std::size_t>(count));
      if (fds[i].fd == out_fd) {
        if (result.out.size() + chunk.size() > spec.max_stdout_bytes) {
          stop_group(ChildResult::End::output_too_large);
          close_fd(out_fd);
        } else {
          result.out.append(chunk);
        }
      } else {
        if (spec.on_stderr) spec.on_stderr(chunk);
        err_tail.append(chunk);
        if (err_tail.size() > 2 * kStderrTail) err_tail.erase(0, err_tail.size() - kStderrTail);
      }
    }
    if (!reaped) {
      const pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid || (w < 0 && errno == ECHILD)) {
        reaped = true;
        reaped_at = Clock::now();
      }
    }
  }
  if (!reaped) {
    ::kill(-pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  result.last_stderr_line = last_line(err_tail);
  if (ending) {
    result.end = *ending;
  } else if (WIFEXITED(status)) {
    result.end = ChildResult::End::exited;
    result.exit_status = WEXITSTATUS(status);
  } else {
    result.end = ChildResult::End::signalled;
    result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  }
  return result;
}

// ---- one probe -----------------------------------------------------------------------------

ProbeOutcome run_runtime_probe(const RuntimeRequest& request, const RuntimeProbeOptions& options) {
  using Status = ProbeOutcome::Status;
  ProbeOutcome outcome;
  const auto fail = [&](Status status, const std::string& why) {
    outcome.status = status;
    outcome.message = fmt::format("--runtime {} on {}: {}", request.key(), options.device_id, why);
    return outcome;
  };
  ChildSpec spec;
  spec.argv = {options.python,    "-m",         "runtimes",
               "--runtime",       request.name, "--device",
               options.device_id, "--threads",  std::to_string(options.threads)};
  if (const auto dtype = request.dtype(); !dtype.empty())
    spec.argv.insert(spec.argv.end(), {"--dtype", dtype});
  if (options.quick) spec.argv.push_back("--quick");
  for (const auto& [name, version] : options.libraries)
    spec.argv.insert(spec.argv.end(), {"--library", name + "=" + version});
  spec.env = environment_with("PYTHONPATH", options.python_path, true);
  // `python -m` searches its working directory first: run from the probes' own folder, so that a
  // folder named runtimes where truepeak was started cannot stand in for them.
  spec.cwd = options.python_path;
  spec.timeout_s = options.timeout_s;
  spec.max_stdout_bytes = options.max_output_bytes;
  spec.stop = options.stop;
  spec.on_stderr = options.on_stderr;
  const auto child = run_child(spec);
  using End = ChildResult::End;
  const std::string said = child.last_stderr_line.empty() ? "" : ": " + child.last_stderr_line;
  switch (child.end) {
    case End::not_started:
      return fail(Status::failed, child.error);
    case End::stopped:
      return fail(Status::interrupted, "interrupted");
    case End::timed_out:
      return fail(Status::failed,
                  fmt::format("the probes did not finish in {:g} s and were stopped ({})",
                              options.timeout_s, shell_words(spec.argv)));
    case End::output_too_large:
      return fail(Status::failed,
                  fmt::format("the probes printed more than {} bytes on stdout; a record is "
                              "one JSON document",
                              options.max_output_bytes));
    case End::signalled:
      return fail(Status::failed, fmt::format("the probes were killed by signal {} ({}){}",
                                              child.signal, ::strsignal(child.signal), said));
    case End::exited:
      break;
  }
  // Exit 3: the framework is missing or too old; its last line says which and how to install it.
  if (child.exit_status == 3)
    return fail(Status::framework_missing, child.last_stderr_line.empty()
                                               ? "the framework is missing or too old"
                                               : child.last_stderr_line);
  if (child.exit_status != 0)
    return fail(Status::failed,
                fmt::format("the probes exited with status {}{}", child.exit_status, said));

  json doc;
  try {
    doc = json::parse(child.out);
  } catch (const json::parse_error& e) {
    const std::string what = e.what();
    return fail(
        Status::failed,
        fmt::format("the probes' output is not a JSON record (byte {}: {})", e.byte,
                    what.substr(what.find(':') == std::string::npos ? 0 : what.find(':') + 2)));
  }
  if (!doc.is_object())
    return fail(Status::failed, "the probes' output is not a JSON object (a runtime record)");
  doc["python"] = options.python;
  if (const auto errors = validate_runtime_record_json(doc); !errors.empty()) {
    const auto more =
        errors.size() > 1 ? fmt::format(" (and {} more)", errors.size() - 1) : std::string();
    return fail(Status::failed,
                fmt::format("the record fails the profile schema: {}{}", errors.front(), more));
  }
  RuntimeRecord record;
  try {
    record = runtime_record_from_json(doc, "the record");
  } catch (const InputError& e) {
    return fail(Status::failed, e.what());
  }
  if (record.runtime != request.name)
    return fail(Status::failed, fmt::format("the record is for runtime '{}'", record.runtime));
  // A probe may name a GPU by its kind alone ("cuda" for the first).
  if (record.device != options.device_id && !(options.device_id == record.device + ":0"))
    return fail(Status::failed, fmt::format("the record is for device '{}'", record.device));
  record.device = options.device_id;
  outcome.status = Status::measured;
  outcome.record = std::move(record);
  return outcome;
}

// ---- all of them ---------------------------------------------------------------------------

std::vector<PlannedProbe> plan_runtime_probes(const std::vector<RuntimeRequest>& requests,
                                              const std::vector<std::string>& device_ids,
                                              const std::string& given_python) {
  std::vector<PlannedProbe> plan;
  // The interpreter of each framework, chosen once: the choice starts an interpreter.
  std::map<std::string, std::string> chosen;
  for (const auto& r : requests) {
    const auto kinds = runtime_device_kinds(r.name);
    const auto module = runtime_framework_module(r.name);
    if (!chosen.count(module)) chosen[module] = choose_python(given_python, r.name, truepeak_source_dir());
    const std::string python = chosen.at(module);
    bool any = false;
    for (const auto& id : device_ids) {
      const std::string kind = id.rfind("cuda", 0) == 0 ? "gpu" : "cpu";
      if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) continue;
      plan.push_back({r, id, python});
      any = true;
    }
    if (!any)
      throw InputError(fmt::format("--runtime {}: runs on {} only, and the devices here are: {}",
                                   r.key(), fmt::join(kinds, " or "), fmt::join(device_ids, ", ")));
  }
  return plan;
}

RuntimeRunSummary run_runtime_probes(Profile& profile, const std::vector<PlannedProbe>& plan,
                                     const RuntimeRunOptions& options) {
  RuntimeRunSummary summary;
  for (const auto& p : plan) {
    if (options.stop && options.stop->load()) {
      summary.interrupted = true;
      break;
    }
    auto it = std::find_if(profile.devices.begin(), profile.devices.end(),
                           [&](const Device& d) { return d.id == p.device_id; });
    if (it == profile.devices.end()) {
      summary.failures.push_back(
          fmt::format("--runtime {}: the profile has no device {}", p.request.key(), p.device_id));
      summary.framework_missing_only = false;
      continue;
    }
    Device& device = *it;
    RuntimeProbeOptions o;
    o.python = p.python;
    o.python_path = options.python_path;
    o.device_id = p.device_id;
    int threads = options.threads;
    if (threads <= 0 && device.kind == "cpu" && device.properties.contains("threads") &&
        device.properties["threads"].is_number_integer())
      threads = device.properties["threads"].get<int>();
    if (threads <= 0) threads = profile.machine.cpu_cores;
    if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    o.threads = threads;
    o.quick = options.quick;
    if (device.libraries.is_object())
      for (const auto& [name, version] : device.libraries.items())
        if (version.is_string()) o.libraries[name] = version.get<std::string>();
    o.timeout_s = options.timeout_s.value_or(options.quick ? 1200.0 : 3600.0);
    o.stop = options.stop;
    o.on_stderr = options.on_stderr;
    if (options.progress)
      options.progress(fmt::format("[{}] runtime {}: {} -m runtimes ({} threads)", p.device_id,
                                   p.request.key(), p.python, threads));
    const auto start = Clock::now();
    auto outcome = run_runtime_probe(p.request, o);
    using Status = ProbeOutcome::Status;
    if (outcome.status == Status::interrupted) {
      summary.interrupted = true;
      break;
    }
    if (outcome.status != Status::measured) {
      if (options.progress) options.progress("truepeak: " + outcome.message);
      summary.failures.push_back(outcome.message);
      summary.framework_missing_only =
          summary.framework_missing_only && outcome.status == Status::framework_missing;
      continue;
    }
    if (options.progress) {
      options.progress(fmt::format(
          "[{}] runtime {}: measured in {:.1f} s{}", p.device_id, p.request.key(),
          seconds_since(start),
          device.runtimes.contains(p.request.key()) ? " (replaces the earlier record)" : ""));
    }
    device.runtimes[p.request.key()] = std::move(*outcome.record);
    summary.measured.push_back(fmt::format("{} on {}", p.request.key(), p.device_id));
  }
  return summary;
}

}  // namespace truepeak
