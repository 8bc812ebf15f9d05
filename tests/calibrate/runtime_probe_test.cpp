// calibrate --runtime: the runtime list, the child-process runner and one probe's outcomes, with
// a fake interpreter (tests/data/runtimes/fake_python.sh) standing in for Python and the probes.
#include "calibrate/runtime_probe.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "core/error.hpp"

namespace truepeak {
namespace {

namespace fs = std::filesystem;
using Status = ProbeOutcome::Status;

const std::string kFake = std::string(TRUEPEAK_TEST_DATA_DIR) + "/runtimes/fake_python.sh";
// Stands for the folder that holds runtimes/: the child runs in it, so it must exist.
const std::string kProbesDir = std::string(TRUEPEAK_TEST_DATA_DIR) + "/runtimes";

// Sets TRUEPEAK_FAKE_PROBE for one test.
class FakeProbe : public ::testing::Test {
 protected:
  void TearDown() override { ::unsetenv("TRUEPEAK_FAKE_PROBE"); }
  static void mode(const char* m) { ::setenv("TRUEPEAK_FAKE_PROBE", m, 1); }
  static RuntimeProbeOptions options() {
    RuntimeProbeOptions o;
    o.python = kFake;
    o.python_path = kProbesDir;
    o.device_id = "cpu";
    o.threads = 3;
    o.quick = true;
    o.timeout_s = 20;
    return o;
  }
};

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

TEST(RuntimeList, ParsesNamesAndLabels) {
  const auto r = parse_runtime_list("torch-jit,onnxruntime:ort117,torch-jit:v2");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].key(), "torch-jit");
  EXPECT_EQ(r[1].name, "onnxruntime");
  EXPECT_EQ(r[1].label, "ort117");
  EXPECT_EQ(r[2].key(), "torch-jit:v2");
  // A label that names a dtype asks for it; any other keeps the runtime's own.
  EXPECT_EQ(r[2].dtype(), "");
  EXPECT_EQ(parse_runtime_list("torch-eager:bf16")[0].dtype(), "bf16");
  EXPECT_EQ(parse_runtime_list("torch-eager:f32")[0].dtype(), "f32");
  EXPECT_EQ(parse_runtime_list("torch-eager")[0].dtype(), "");
}

TEST(RuntimeList, BadItemsAreOneLineNamingWhatIsKnown) {
  EXPECT_EQ(message_of([] { parse_runtime_list("torch-jit,bogus"); }),
            "--runtime bogus: unknown runtime (runtimes: torch-jit, torch-eager, torch-compile, "
            "torch-cudagraph, "
            "onnxruntime)");
  EXPECT_EQ(message_of([] { parse_runtime_list("torch-jit,torch-jit"); }),
            "--runtime torch-jit,torch-jit: torch-jit is given twice");
  EXPECT_NE(message_of([] { parse_runtime_list("torch-jit:"); }).find("a label is"),
            std::string::npos);
  EXPECT_NE(message_of([] { parse_runtime_list("torch-jit:a b"); }).find("a label is"),
            std::string::npos);
  EXPECT_NE(message_of([] { parse_runtime_list(""); }).find("unknown runtime"), std::string::npos);
}

TEST(RuntimeList, DevicesAndFrameworks) {
  EXPECT_EQ(runtime_device_kinds("torch-cudagraph"), std::vector<std::string>{"gpu"});
  EXPECT_EQ(runtime_device_kinds("onnxruntime"), std::vector<std::string>{"cpu"});
  EXPECT_EQ(runtime_framework_module("torch-compile"), "torch");
  EXPECT_EQ(runtime_framework_module("onnxruntime"), "onnxruntime");
  const auto plan =
      plan_runtime_probes(parse_runtime_list("torch-eager"), {"cpu", "cuda:0"}, kFake);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[1].device_id, "cuda:0");
  EXPECT_EQ(plan[1].python, kFake);
  EXPECT_EQ(message_of(
                [] { plan_runtime_probes(parse_runtime_list("torch-cudagraph"), {"cpu"}, kFake); }),
            "--runtime torch-cudagraph: runs on gpu only, and the devices here are: cpu");
}

TEST(ChoosePython, GivenPathMustBeAnExecutable) {
  EXPECT_EQ(choose_python(kFake, "torch-jit", "/nonexistent"), kFake);
  EXPECT_EQ(message_of([] { choose_python("/nonexistent/python", "torch-jit", "/nonexistent"); }),
            "--python /nonexistent/python: not an executable file");
  EXPECT_EQ(message_of([] { choose_python("no-such-python-here", "torch-jit", "/nonexistent"); }),
            "--python no-such-python-here: not found on PATH");
  // A bare name is looked up on PATH.
  EXPECT_EQ(fs::path(choose_python("sh", "torch-jit", "/nonexistent")).filename(), "sh");
}

TEST(RuntimesPythonPath, ARelativeFolderBecomesAbsolute) {
  // The probes run in that folder: a relative path would name another from there.
  ::setenv("TRUEPEAK_RUNTIMES_DIR", "some/relative/folder", 1);
  const fs::path path = runtimes_python_path();
  ::unsetenv("TRUEPEAK_RUNTIMES_DIR");
  EXPECT_TRUE(path.is_absolute());
  EXPECT_EQ(path, fs::current_path() / "some/relative/folder");
}

TEST(ChoosePython, ARelativePathBecomesAbsoluteWithItsLinksKept) {
  // The probes run in their own folder; a venv's interpreter is a link that must stay one.
  const fs::path dir = fs::temp_directory_path() / ("truepeak-python-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::create_symlink("/bin/sh", dir / "python");
  const auto relative = (dir / "python").lexically_relative(fs::current_path());
  const auto chosen = fs::path(choose_python(relative.string(), "torch-jit", "/nonexistent"));
  EXPECT_TRUE(relative.is_relative());
  EXPECT_TRUE(chosen.is_absolute());
  EXPECT_TRUE(fs::is_symlink(chosen));
  EXPECT_TRUE(fs::equivalent(chosen, dir / "python"));
  fs::remove_all(dir);
}

TEST(ChoosePython, ProjectVenvWhereItHasTheFramework) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  const fs::path source =
      fs::temp_directory_path() / ("truepeak_venv_test_" + std::to_string(::getpid()));
  fs::create_directories(source / ".venv" / "bin");
  const fs::path python = source / ".venv" / "bin" / "python";
  const auto write_python = [&](const std::string& body) {
    std::ofstream(python) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(python, fs::perms::owner_all);
  };
  // It is asked to find the runtime's framework: this one has onnxruntime, not torch.
  write_python("case \"$2\" in *\"find_spec('onnxruntime')\"*) exit 0 ;; *) exit 1 ;; esac");
  EXPECT_EQ(choose_python("", "onnxruntime", source.string()), python.string());
  EXPECT_EQ(choose_python("", "torch-jit", source.string()), "/usr/bin/python3");
  // Without a venv, the system's.
  EXPECT_EQ(choose_python("", "onnxruntime", "/nonexistent"), "/usr/bin/python3");
  fs::remove_all(source);
}

TEST(RunChild, CapturesStdoutStatusAndTheLastStderrLine) {
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo out; printf 'one\\ntwo\\r three \\n\\n' >&2; exit 5"};
  std::string passed;
  spec.on_stderr = [&](std::string_view chunk) { passed.append(chunk); };
  const auto r = run_child(spec);
  EXPECT_EQ(r.end, ChildResult::End::exited);
  EXPECT_EQ(r.exit_status, 5);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.last_stderr_line, "three");
  EXPECT_EQ(passed, "one\ntwo\r three \n\n");
}

TEST(RunChild, AProgramThatCannotRunSaysWhy) {
  ChildSpec spec;
  spec.argv = {"/nonexistent/python3", "-m", "runtimes"};
  const auto r = run_child(spec);
  EXPECT_EQ(r.end, ChildResult::End::not_started);
  EXPECT_EQ(r.error, "cannot run /nonexistent/python3: No such file or directory");
}

TEST(RunChild, RunsInTheDirectoryItIsGiven) {
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", "pwd"};
  spec.cwd = "/usr";
  EXPECT_EQ(run_child(spec).out, "/usr\n");
  spec.cwd = "/nonexistent";
  const auto r = run_child(spec);
  EXPECT_EQ(r.end, ChildResult::End::not_started);
  EXPECT_EQ(r.error, "cannot run /bin/sh in /nonexistent: No such file or directory");
}

TEST(RunChild, TooMuchOutputEndsTheChild) {
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", "while :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done"};
  spec.max_stdout_bytes = 4096;
  spec.timeout_s = 20;
  const auto r = run_child(spec);
  EXPECT_EQ(r.end, ChildResult::End::output_too_large);
  EXPECT_LE(r.out.size(), 4096u);
}

TEST(RunChild, StopEndsTheChildAndItsGroup) {
  std::atomic<bool> stop{false};
  ChildSpec spec;
  // The shell's own child (sleep) is in its group, and ends with it.
  spec.argv = {"/bin/sh", "-c", "sleep 30; echo late"};
  spec.stop = &stop;
  std::thread raiser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop = true;
  });
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_child(spec);
  raiser.join();
  EXPECT_EQ(r.end, ChildResult::End::stopped);
  EXPECT_EQ(r.out, "");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST_F(FakeProbe, RecordIsReadCheckedAndNamesItsInterpreter) {
  mode("ok");
  std::string progress;
  auto o = options();
  o.on_stderr = [&](std::string_view chunk) { progress.append(chunk); };
  const auto outcome = run_runtime_probe({"torch-jit", ""}, o);
  ASSERT_EQ(outcome.status, Status::measured) << outcome.message;
  const auto& r = *outcome.record;
  EXPECT_EQ(r.runtime, "torch-jit");
  EXPECT_EQ(r.device, "cpu");
  EXPECT_EQ(r.python, kFake);
  EXPECT_DOUBLE_EQ(r.op_s, 9.4e-6);
  // The command line of docs/runtimes.md, with the probes' folder first on PYTHONPATH.
  EXPECT_EQ(r.settings.at("argv"),
            "-m runtimes --runtime torch-jit --device cpu --threads 3 --quick");
  EXPECT_EQ(r.settings.at("pythonpath").get<std::string>().rfind(kProbesDir, 0), 0u);
  // Run from that folder: `python -m` searches its working directory before PYTHONPATH.
  EXPECT_EQ(r.settings.at("cwd"), kProbesDir);
  EXPECT_NE(progress.find("fake probes: done"), std::string::npos);
}

TEST_F(FakeProbe, ADtypeLabelReachesTheProbesCommandLine) {
  mode("ok");
  const auto outcome = run_runtime_probe({"torch-jit", "bf16"}, options());
  ASSERT_EQ(outcome.status, Status::measured) << outcome.message;
  EXPECT_EQ(outcome.record->settings.at("argv"),
            "-m runtimes --runtime torch-jit --device cpu --threads 3 --dtype bf16 --quick");
}

TEST_F(FakeProbe, MissingFrameworkIsItsLastStderrLine) {
  mode("missing");
  const auto outcome = run_runtime_probe({"torch-jit", ""}, options());
  EXPECT_EQ(outcome.status, Status::framework_missing);
  EXPECT_EQ(outcome.message,
            "--runtime torch-jit on cpu: torch is not installed here: pip install 'torch>=2'");
}

TEST_F(FakeProbe, GarbageOutputFails) {
  mode("garbage");
  const auto outcome = run_runtime_probe({"torch-jit", "v2"}, options());
  EXPECT_EQ(outcome.status, Status::failed);
  EXPECT_EQ(outcome.message.rfind(
                "--runtime torch-jit:v2 on cpu: the probes' output is not a JSON record", 0),
            0u)
      << outcome.message;
}

TEST_F(FakeProbe, RecordFailingTheSchemaFails) {
  mode("invalid");
  const auto outcome = run_runtime_probe({"torch-jit", ""}, options());
  EXPECT_EQ(outcome.status, Status::failed);
  EXPECT_EQ(outcome.message,
            "--runtime torch-jit on cpu: the record fails the profile schema: /op_s: -1 is less "
            "than the minimum 0");
}

TEST_F(FakeProbe, OtherExitStatusFailsWithItsLastLine) {
  mode("fail");
  const auto outcome = run_runtime_probe({"torch-jit", ""}, options());
  EXPECT_EQ(outcome.status, Status::failed);
  EXPECT_EQ(outcome.message,
            "--runtime torch-jit on cpu: the probes exited with status 1: RuntimeError: boom");
}

TEST_F(FakeProbe, TimeoutStopsTheProbes) {
  mode("hang");
  auto o = options();
  o.timeout_s = 0.5;
  const auto start = std::chrono::steady_clock::now();
  const auto outcome = run_runtime_probe({"torch-jit", ""}, o);
  EXPECT_EQ(outcome.status, Status::failed);
  EXPECT_EQ(
      outcome.message.rfind(
          "--runtime torch-jit on cpu: the probes did not finish in 0.5 s and were stopped (", 0),
      0u)
      << outcome.message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST_F(FakeProbe, RecordOfAnotherRuntimeOrDeviceFails) {
  mode("ok");
  auto outcome = run_runtime_probe({"onnxruntime", ""}, options());
  EXPECT_EQ(outcome.status, Status::failed);
  EXPECT_EQ(outcome.message, "--runtime onnxruntime on cpu: the record is for runtime 'torch-jit'");
  auto o = options();
  o.device_id = "cuda:0";
  outcome = run_runtime_probe({"torch-jit", ""}, o);
  EXPECT_EQ(outcome.message, "--runtime torch-jit on cuda:0: the record is for device 'cpu'");
}

TEST_F(FakeProbe, ProbesAreStoredUnderTheirDeviceAndFailuresDoNotStopTheRest) {
  Profile profile;
  profile.machine.cpu_cores = 2;
  Device cpu;
  cpu.id = "cpu";
  cpu.kind = "cpu";
  cpu.libraries = {{"onednn", "2.6.3"}};
  profile.devices.push_back(cpu);
  RuntimeRunOptions o;
  o.python_path = kProbesDir;
  o.quick = true;
  o.timeout_s = 20;
  std::vector<std::string> lines;
  o.progress = [&](const std::string& line) { lines.push_back(line); };

  mode("ok");
  auto plan = plan_runtime_probes(parse_runtime_list("torch-jit:v2,onnxruntime"), {"cpu"}, kFake);
  auto summary = run_runtime_probes(profile, plan, o);
  EXPECT_EQ(summary.measured, std::vector<std::string>{"torch-jit:v2 on cpu"});
  ASSERT_EQ(summary.failures.size(), 1u);
  EXPECT_FALSE(summary.framework_missing_only);
  EXPECT_FALSE(summary.interrupted);
  ASSERT_EQ(profile.devices[0].runtimes.count("torch-jit:v2"), 1u);
  // The machine's cores, where the device does not say how many threads it ran; the library
  // the device was measured with.
  EXPECT_EQ(profile.devices[0].runtimes.at("torch-jit:v2").settings.at("argv"),
            "-m runtimes --runtime torch-jit --device cpu --threads 2 --quick --library onednn=2.6.3");

  mode("missing");
  summary = run_runtime_probes(profile, plan, o);
  EXPECT_TRUE(summary.measured.empty());
  EXPECT_EQ(summary.failures.size(), 2u);
  EXPECT_TRUE(summary.framework_missing_only);
  // What was measured before stays.
  EXPECT_EQ(profile.devices[0].runtimes.size(), 1u);

  std::atomic<bool> stop{true};
  o.stop = &stop;
  summary = run_runtime_probes(profile, plan, o);
  EXPECT_TRUE(summary.interrupted);
  EXPECT_TRUE(summary.failures.empty());
}

}  // namespace
}  // namespace truepeak
