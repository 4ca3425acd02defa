#include "match/marks.h"

#include <cctype>

namespace portdiff {
namespace {

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

/// The run of hex digits at `at` when it is 7 to 40 long and not followed by a
/// letter or digit (a word of its own); empty otherwise.
std::string hex_at(std::string_view text, std::size_t at) {
  std::size_t end = at;
  while (end < text.size() && is_hex(text[end])) ++end;
  const std::size_t length = end - at;
  if (length < 7 || length > 40) return "";
  if (end < text.size() && std::isalnum(static_cast<unsigned char>(text[end])) != 0) return "";
  return std::string(text.substr(at, length));
}

/// Adds a mark for every `prefix HEX suffix` in `text`.
void scan(std::string_view text, std::string_view prefix, std::string_view suffix, MarkKind kind,
          std::vector<CommitMark>& out) {
  for (std::size_t at = text.find(prefix); at != std::string_view::npos;
       at = text.find(prefix, at + 1)) {
    const std::string hex = hex_at(text, at + prefix.size());
    if (hex.empty()) continue;
    if (text.substr(at + prefix.size() + hex.size(), suffix.size()) != suffix) continue;
    out.push_back({kind, hex});
  }
}

std::string_view trimmed(std::string_view line) {
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r'))
    line.remove_suffix(1);
  return line;
}

}  // namespace

Marks read_marks(std::string_view message) {
  Marks marks;
  scan(message, "(cherry picked from commit ", ")", MarkKind::cherry_pick, marks.commits);
  scan(message, "[ Upstream commit ", " ]", MarkKind::upstream_bracket, marks.commits);
  scan(message, "[Upstream commit ", "]", MarkKind::upstream_bracket, marks.commits);
  // patchback: `[PR #123/0a1b2c3d backport]`, the number any run of digits.
  for (std::size_t at = message.find("[PR #"); at != std::string_view::npos;
       at = message.find("[PR #", at + 1)) {
    std::size_t slash = at + 5;
    while (slash < message.size() && std::isdigit(static_cast<unsigned char>(message[slash])) != 0)
      ++slash;
    if (slash == at + 5 || slash >= message.size() || message[slash] != '/') continue;
    const std::string hex = hex_at(message, slash + 1);
    if (!hex.empty() && message.substr(slash + 1 + hex.size(), 10) == " backport]")
      marks.commits.push_back({MarkKind::patchback, hex});
  }
  // Line marks: Linux stable's `commit X upstream.` and Gerrit's trailer.
  std::size_t start = 0;
  while (start <= message.size()) {
    std::size_t end = message.find('\n', start);
    if (end == std::string_view::npos) end = message.size();
    const std::string_view line = trimmed(message.substr(start, end - start));
    if (line.substr(0, 7) == "commit ") {
      const std::string hex = hex_at(line, 7);
      const std::string_view rest = hex.empty() ? "" : line.substr(7 + hex.size());
      if (rest == " upstream." || rest == " upstream")
        marks.commits.push_back({MarkKind::upstream_line, hex});
    } else if (line.substr(0, 11) == "Change-Id: ") {
      marks.change_id = std::string(trimmed(line.substr(11)));
    }
    start = end + 1;
  }
  return marks;
}

const char* mark_name(MarkKind kind, bool json_name) {
  switch (kind) {
    case MarkKind::cherry_pick:
      return json_name ? "cherry-pick-trailer" : "cherry-pick trailer";
    case MarkKind::upstream_line:
      return json_name ? "upstream-line" : "upstream line";
    case MarkKind::upstream_bracket:
      return json_name ? "upstream-bracket" : "upstream bracket";
    case MarkKind::patchback:
      return json_name ? "patchback" : "patchback mark";
    case MarkKind::change_id:
      return json_name ? "change-id" : "Change-Id";
  }
  return "";
}

}  // namespace portdiff
