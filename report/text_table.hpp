// A table of strings printed as aligned plain text or as GitHub markdown. One result model,
// several printers: compare builds the cells once and picks the printer.
#pragma once

#include <string>
#include <vector>

namespace truepeak::report {

struct TextTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;

  // Columns padded to their widest cell; the first column left-aligned, the others right-aligned.
  std::string to_text() const;
  // "| a | b |" rows with a "|---|---:|" separator; '|' inside cells is escaped.
  std::string to_markdown() const;
};

}  // namespace truepeak::report
