// A table of strings printed as aligned plain text or as GitHub markdown. One result model,
// several printers: compare builds the cells once and picks the printer.
#pragma once

#include <string>
#include <vector>

namespace truepeak::report {

struct TextTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  // Columns printed left-aligned in to_text(); by default only the first (a label).
  std::vector<std::size_t> left_columns = {0};

  // Columns padded to their widest cell; numbers right-aligned, the left_columns left-aligned.
  std::string to_text() const;
  // "| a | b |" rows with a "|---|---:|" separator; '|' inside cells is escaped.
  std::string to_markdown() const;
};

}  // namespace truepeak::report
