// The command line: the input is the arguments, one a line, after "truepeak". Commands that
// measure the machine (calibrate) or write files (report, -o) are left out: the fuzzer must not
// write where it runs. Standard output and error are discarded.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

int truepeak_main(int argc, char** argv);  // cli/main.cpp, renamed for this target

namespace {

bool allowed(const std::vector<std::string>& args) {
  if (args.empty()) return false;
  static const char* const commands[] = {"show", "estimate", "models", "compare", "export"};
  bool known = false;
  for (const char* c : commands) known = known || args[0] == c;
  if (!known) return false;
  for (const auto& a : args) {
    // -o/--out, also packed with other short flags (-xo) or with its value (-ofile).
    if (a == "--out" || a.rfind("--out=", 0) == 0) return false;
    if (a.size() > 1 && a[0] == '-' && a[1] != '-' && a.find('o') != std::string::npos) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return 0;
  std::vector<std::string> args;
  std::string arg;
  for (std::size_t i = 0; i < size; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\n') {
      args.push_back(arg);
      arg.clear();
    } else if (c != '\0') {
      arg += c;
    }
  }
  if (!arg.empty()) args.push_back(arg);
  if (args.size() > 32 || !allowed(args)) return 0;
  std::vector<char*> argv;
  static char name[] = "truepeak";
  argv.push_back(name);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  static std::ostringstream sink;
  auto* out = std::cout.rdbuf(sink.rdbuf());
  auto* err = std::cerr.rdbuf(sink.rdbuf());
  const int status = truepeak_main(static_cast<int>(args.size() + 1), argv.data());
  std::cout.rdbuf(out);
  std::cerr.rdbuf(err);
  const std::string said = sink.str();
  sink.str("");
  // Bad input is exit 2 with one line; exit 1 is a runtime failure, which no argument may cause
  // here (nothing is measured, the built-in profile is sound).
  if (status == 1) {
    std::cerr << "fuzz: exit status 1: " << said;
    std::abort();
  }
  return 0;
}
