// Checks oneDNN calls. The C++ API reports failures as dnnl::error exceptions; this turns them into
// truepeak errors that name the source file and line, the expression and oneDNN's status.
// "unimplemented" means oneDNN has no implementation of the problem on this ISA, so it becomes
// Unsupported.
#pragma once

#include <fmt/format.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.hpp"

namespace truepeak::cpu {

inline const char* dnnl_status_name(dnnl_status_t status) {
  switch (status) {
    case dnnl_success:
      return "dnnl_success";
    case dnnl_out_of_memory:
      return "dnnl_out_of_memory";
    case dnnl_invalid_arguments:
      return "dnnl_invalid_arguments";
    case dnnl_unimplemented:
      return "dnnl_unimplemented";
    case dnnl_iterator_ends:
      return "dnnl_iterator_ends";
    case dnnl_runtime_error:
      return "dnnl_runtime_error";
    case dnnl_not_required:
      return "dnnl_not_required";
  }
  return "dnnl_unknown_status";
}

template <typename Call>
decltype(auto) dnnl_call(Call&& call, const char* file, int line, const char* expression) {
  try {
    return std::forward<Call>(call)();
  } catch (const dnnl::error& e) {
    const std::string_view path(file);
    const std::string_view name = path.substr(path.find_last_of('/') + 1);  // npos + 1: the whole path
    const std::string message = fmt::format("{}:{}: {} failed: {} ({})", name, line, expression,
                                            e.what(), dnnl_status_name(e.status));
    if (e.status == dnnl_unimplemented) {
      throw Unsupported(message);
    }
    throw Error(message);
  }
}

}  // namespace truepeak::cpu

// Evaluates a oneDNN C++ API expression and yields its value; throws truepeak::Error (or
// Unsupported for dnnl_unimplemented) on failure.
#define TRUEPEAK_DNNL(...)                                                                        \
  ::truepeak::cpu::dnnl_call([&]() -> decltype(auto) { return __VA_ARGS__; }, __FILE__, __LINE__, \
                             #__VA_ARGS__)
