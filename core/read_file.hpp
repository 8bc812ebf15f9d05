// Reading an input file whole, with a limit on its size: a profile, a model, an ONNX graph. A
// path to something endless (`show /dev/zero`) or enormous is refused with one line instead of
// reading until memory runs out.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace truepeak {

// The largest files truepeak reads. Profiles run to a few hundred KB and model files to less;
// 64 MiB leaves room for far larger ones. An ONNX graph holds its weights: protobuf reads at most
// 2 GiB in one message.
inline constexpr std::uint64_t kMaxProfileBytes = std::uint64_t{64} << 20;
inline constexpr std::uint64_t kMaxModelBytes = std::uint64_t{64} << 20;
inline constexpr std::uint64_t kMaxOnnxBytes = (std::uint64_t{2} << 30) - 1;

// The whole of `path`, at most `max_bytes` of it. `what` names the file's role in messages
// ("profile", "model", "ONNX model"). Throws InputError, one line naming the path: when it cannot
// be opened ("PATH: cannot read WHAT: REASON"), is a directory, or holds more than `max_bytes`
// (a regular file is measured before it is read; a stream such as a pipe or a device is read up
// to the limit and refused past it).
std::string read_input_file(const std::string& path, std::uint64_t max_bytes, std::string_view what);

// The same, parsed as JSON. Throws InputError "PATH: not valid JSON (byte N): REASON".
nlohmann::json read_json_file(const std::string& path, std::uint64_t max_bytes, std::string_view what);

}  // namespace truepeak
