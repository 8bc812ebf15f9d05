#include "core/table.hpp"

#include <algorithm>

namespace truepeak {
namespace {

// Display width: counts UTF-8 code points, not bytes.
std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char ch : s) {
    if ((ch & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string escape_markdown(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

}  // namespace

std::string TextTable::str() const {
  std::vector<std::size_t> width(header_.size(), 0);
  auto widen = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], display_width(row[i]));
  };
  widen(header_);
  for (const auto& r : rows_) widen(r);
  auto line = [&](const std::vector<std::string>& row) {
    std::string out;
    for (std::size_t i = 0; i < width.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      const std::string pad(width[i] - display_width(cell), ' ');
      const bool left = std::find(left_columns_.begin(), left_columns_.end(), i) != left_columns_.end();
      if (i > 0) out += "  ";
      out += left ? cell + pad : pad + cell;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header_);
  std::size_t total = 0;
  for (auto w : width) total += w;
  out += std::string(total + 2 * (width.empty() ? 0 : width.size() - 1), '-') + "\n";
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string TextTable::markdown() const {
  auto line = [&](const std::vector<std::string>& row) {
    std::string out = "|";
    for (std::size_t i = 0; i < header_.size(); ++i) {
      out += ' ';
      out += escape_markdown(i < row.size() ? row[i] : "");
      out += " |";
    }
    return out + "\n";
  };
  std::string out = line(header_) + "|";
  for (std::size_t i = 0; i < header_.size(); ++i) out += i == 0 ? "---|" : "---:|";
  out += "\n";
  for (const auto& r : rows_) out += line(r);
  return out;
}

}  // namespace truepeak
