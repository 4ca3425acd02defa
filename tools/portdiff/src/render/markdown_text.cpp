#include "render/markdown_text.h"

#include "render/quote.h"

#include <algorithm>
#include <string_view>

namespace portdiff {

namespace {

/// Already printable text (no newline) as inline code: a backtick fence longer
/// than any run inside, and in a table cell '|' escaped.
std::string fenced(const std::string& text, bool in_table) {
  std::string escaped;
  std::size_t run = 0, longest = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
    if (c == '|' && in_table) escaped += '\\';
    escaped += c;
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !escaped.empty() && (escaped.front() == '`' || escaped.back() == '`' ||
                                        (escaped.front() == ' ' && escaped.back() == ' '));
  return pad ? fence + " " + escaped + " " + fence : fence + escaped + fence;
}

}  // namespace

std::string code_span(const std::string& text) { return fenced(text, true); }

std::string code(const std::string& raw) { return fenced(quote(raw), true); }

std::string code_text(const std::string& raw) { return fenced(quote(raw), false); }

/// Plain text for Markdown: the bytes that can start inline markup or split a
/// table cell are backslash-escaped (CommonMark allows it for any punctuation), so
/// no name or excerpt in a note becomes markup.
std::string md_text(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::string_view("\\`*_[]<>|~&").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace portdiff
