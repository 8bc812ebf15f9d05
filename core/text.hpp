// Small text helpers shared by the readers of names, flags and file extensions.
#pragma once

#include <string>

namespace truepeak {

// `text` with ASCII letters in lower case; other bytes (UTF-8 included) as they are.
inline std::string ascii_lower(std::string text) {
  for (auto& c : text)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return text;
}

}  // namespace truepeak
