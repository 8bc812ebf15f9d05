// Where a command writes its result with -o/--out: a regular file, written whole or not at all
// (a temporary file beside it, then a rename), or "-" for standard output. Anything else at the
// path is refused: a rename would replace a device node (/dev/null, run as root) with a regular
// file, and a directory cannot take the text.
#pragma once

#include <string>
#include <string_view>

namespace truepeak {

// Whether `path` means standard output.
inline bool is_stdout_path(std::string_view path) { return path == "-"; }

// Checks `path` before any work is done: "-", or a path whose directory exists and where nothing
// but a regular file (or nothing) is. `flag` names the option in messages ("-o"). Throws
// InputError, one line.
void check_output_path(const std::string& path, std::string_view flag);

// Writes `text` to `path` (checked as above): to standard output for "-", else to a temporary
// file beside it that is then renamed over it. Throws InputError naming the path and the
// system's reason when the write fails; nothing is left behind then.
void write_output(const std::string& path, const std::string& text, std::string_view flag);

}  // namespace truepeak
