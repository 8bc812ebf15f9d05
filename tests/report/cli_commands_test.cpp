// compare / export / report through the real executable: exit codes, one-line errors, files.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "report_test_util.hpp"

namespace truepeak::report {
namespace {

namespace fs = std::filesystem;
using test::data_path;

// The tests executable lives in <build>/tests, the truepeak executable in <build>.
fs::path truepeak_exe() {
  return fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "truepeak";
}

struct Result {
  int status = -1;
  std::string output;  // stdout and stderr
};

Result run(const std::string& args) {
  Result r;
  const auto cmd = truepeak_exe().string() + " " + args + " 2>&1";
  if (FILE* pipe = popen(cmd.c_str(), "r")) {
    char buffer[4096];
    while (fgets(buffer, sizeof buffer, pipe)) r.output += buffer;
    const int raw = pclose(pipe);
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  }
  return r;
}

std::size_t lines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

class CliCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(truepeak_exe())) GTEST_SKIP() << "no truepeak executable at " << truepeak_exe();
    dir_ = fs::temp_directory_path() / ("truepeak_cli_report_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  fs::path dir_;
  const std::string cpu_ = data_path("profile_cpu.json");
  const std::string gpu_ = data_path("profile_gpu.json");
};

TEST_F(CliCommands, BadInputIsOneLineAndExitTwo) {
  for (const auto& args :
       {"export --to excel " + cpu_, "export --to csv " + (dir_ / "missing.json").string(),
        "export --to prometheus --device tpu " + gpu_, "compare --format xml " + cpu_,
        "compare --price nobody=1 " + cpu_, "report " + cpu_ + " -o /nonexistent-dir/r.html"}) {
    const auto r = run(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_EQ(lines(r.output), 1u) << args << "\n" << r.output;
  }
  const auto bad = (dir_ / "bad.json").string();
  write_file_atomic(bad, "{\"schema_version\": ");
  const auto r = run("report " + bad + " -o " + (dir_ / "r.html").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("bad.json"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "r.html"));
}

TEST_F(CliCommands, ExportWritesTheFileAndPrintsTheNotes) {
  const auto out = (dir_ / "gpu.json").string();
  const auto r = run("export --to llm-analysis " + gpu_ + " -o " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("--flops_efficiency"), std::string::npos) << r.output;
  const auto doc = test::read_json(out);
  EXPECT_TRUE(doc.contains("peak_fp16_TFLOPS"));
  const auto csv = run("export --to csv --device cpu " + cpu_);
  ASSERT_EQ(csv.status, 0) << csv.output;
  EXPECT_EQ(csv.output.rfind("machine,device,", 0), 0u);
}

TEST_F(CliCommands, ExportCalculonNetworks) {
  // A network block Calculon would refuse, or --network with another format: one line, exit 2.
  const auto bad = (dir_ / "bad-net.json").string();
  write_file_atomic(bad, "{\"networks\": [{\"bandwidth\": 300}]}");
  for (const auto& args :
       {"export --to calculon --network " + bad + " " + gpu_,
        "export --to calculon --network " + (dir_ / "none.json").string() + " " + gpu_,
        "export --to csv --network " + bad + " " + gpu_}) {
    const auto r = run(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_EQ(lines(r.output), 1u) << args << "\n" << r.output;
  }
  // The user's block goes in as given.
  const auto net = (dir_ / "net.json").string();
  write_file_atomic(net, test::read_text(data_path("calculon_system_example.json")));
  const auto out = (dir_ / "system.json").string();
  const auto r = run("export --to calculon --network " + net + " " + gpu_ + " -o " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(test::read_json(out)["networks"], test::read_json(net)["networks"]);
  // Without figures for a network, a placeholder and a warning.
  const auto cpu = run("export --to calculon " + cpu_ + " -o " + out);
  ASSERT_EQ(cpu.status, 0) << cpu.output;
  EXPECT_NE(cpu.output.find("truepeak: warning: networks: a placeholder, NOT MEASURED"),
            std::string::npos)
      << cpu.output;
}

TEST_F(CliCommands, CompareAndReport) {
  const auto r = run("compare " + cpu_ + " " + gpu_ + " --format json");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output)["columns"].size(), 3u);
  const auto md = run("compare " + cpu_ + " " + gpu_ + " --format md --price fixture-cpu-box=0.1");
  ASSERT_EQ(md.status, 0) << md.output;
  EXPECT_NE(md.output.find("$0.10/h"), std::string::npos) << md.output;
  const auto html = (dir_ / "r.html").string();
  const auto rep = run("report " + cpu_ + " " + gpu_ + " -o " + html);
  ASSERT_EQ(rep.status, 0) << rep.output;
  EXPECT_GT(fs::file_size(html), 10000u);
}

}  // namespace
}  // namespace truepeak::report
