#include "report/text_table.hpp"

#include <algorithm>
#include <set>

namespace truepeak::report {
namespace {

// Display width: counts UTF-8 code points, not bytes, so "×" pads like one character.
std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char ch : s) {
    if ((ch & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string pad(const std::string& s, std::size_t width, bool left) {
  const auto w = display_width(s);
  if (w >= width) return s;
  const std::string fill(width - w, ' ');
  return left ? s + fill : fill + s;
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

std::string TextTable::to_text() const {
  std::size_t columns = header.size();
  for (const auto& r : rows) columns = std::max(columns, r.size());
  std::vector<std::size_t> widths(columns, 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size(); ++i)
      widths[i] = std::max(widths[i], display_width(row[i]));
  };
  measure(header);
  for (const auto& r : rows) measure(r);
  const std::set<std::size_t> left(left_columns.begin(), left_columns.end());
  auto line = [&](const std::vector<std::string>& row) {
    std::string out;
    for (std::size_t i = 0; i < columns; ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      if (i > 0) out += "  ";
      out += pad(cell, widths[i], left.count(i) > 0);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header);
  std::size_t total = 0;
  for (auto w : widths) total += w;
  out += std::string(total + 2 * (columns ? columns - 1 : 0), '-') + "\n";
  for (const auto& r : rows) out += line(r);
  return out;
}

std::string TextTable::to_markdown() const {
  std::size_t columns = header.size();
  for (const auto& r : rows) columns = std::max(columns, r.size());
  auto line = [&](const std::vector<std::string>& row) {
    std::string out = "|";
    for (std::size_t i = 0; i < columns; ++i) {
      out += ' ';
      out += escape_markdown(i < row.size() ? row[i] : "");
      out += " |";
    }
    return out + "\n";
  };
  std::string out = line(header);
  out += "|";
  for (std::size_t i = 0; i < columns; ++i) out += i == 0 ? "---|" : "---:|";
  out += "\n";
  for (const auto& r : rows) out += line(r);
  return out;
}

}  // namespace truepeak::report
