#include "render/excerpt.h"

#include "classify/interdiff.h"
#include "render/quote.h"

#include <algorithm>
#include <cstdint>

namespace portdiff {
namespace {

constexpr std::size_t max_bytes = 60;
/// Bytes of context an excerpt keeps before the first differing byte.
constexpr std::size_t lead_bytes = 20;

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

/// The first line, in patch order, that `only` marks as having no partner:
/// its origin, bytes and place, or nothing when every line has one.
struct Found final {
  bool found = false;
  char origin = '+';
  std::string_view line;
  std::uint32_t line_number = 0;
};

Found first_unmatched(const PatchLines& lines, const std::vector<bool>& added_only,
                      const std::vector<bool>& deleted_only) {
  std::size_t added = 0, deleted = 0;
  for (char origin : lines.order) {
    const bool plus = origin == '+';
    const std::size_t i = plus ? added++ : deleted++;
    if ((plus ? added_only : deleted_only)[i])
      return {true, origin, plus ? lines.added.line(i) : lines.deleted.line(i),
              plus ? lines.added_at[i] : lines.deleted_at[i]};
  }
  return {};
}

bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/// The first byte that is not a blank, or the line's size when it is all blanks:
/// where a line deeply indented, or of blanks only, starts to say something.
std::size_t first_non_blank(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && blank(line[i])) ++i;
  return i;
}

/// Whether the shown bytes (between the quotes) are blanks only, so the excerpt
/// alone does not say which line it is.
bool shows_only_blanks(std::string_view line, std::size_t focus) {
  if (line.size() <= max_bytes) return first_non_blank(line) == line.size();
  std::size_t begin = focus > lead_bytes ? focus - lead_bytes : 0;
  begin = std::min(begin, line.size() - max_bytes);
  const std::string_view window = line.substr(begin, max_bytes);
  return first_non_blank(window) == window.size();
}

std::size_t first_differing_byte(std::string_view a, std::string_view b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

std::string line_excerpt(char origin, std::string_view line, std::size_t focus) {
  if (line.size() <= max_bytes) return std::string(1, origin) + quote_always(line);
  // A window of max_bytes that shows `focus` with some bytes before it, both ends
  // on character boundaries; "..." marks each side that was cut.
  std::size_t begin = focus > lead_bytes ? focus - lead_bytes : 0;
  begin = std::min(begin, line.size() - max_bytes);
  while (begin > 0 && continuation(line[begin])) --begin;
  std::size_t end = begin + max_bytes;
  while (end < line.size() && continuation(line[end])) --end;
  return std::string(1, origin) + (begin > 0 ? "..." : "") +
         quote_always(line.substr(begin, end - begin)) + (end < line.size() ? "..." : "");
}

std::string first_difference_excerpt(const PatchLines& source, const PatchLines& target,
                                     const ExcerptStyle& style) {
  const Interdiff lines = interdiff(source, target);
  const Found s = first_unmatched(source, lines.source_added, lines.source_deleted);
  const Found t = first_unmatched(target, lines.target_added, lines.target_deleted);
  // Two lines of the same kind are shown around their first differing byte, so the
  // difference is in view however far into the line it lies; a line on its own
  // from where its text starts, so a deep indent does not fill the window (P30).
  const bool pair = s.found && t.found && s.origin == t.origin;
  const std::size_t pair_focus = pair ? first_differing_byte(s.line, t.line) : 0;
  const auto focus_of = [&](const Found& f) {
    return pair                                       ? pair_focus
           : first_non_blank(f.line) == f.line.size() ? 0
                                                      : first_non_blank(f.line);
  };
  // Where the excerpts alone do not tell the sides apart — the same text on both
  // (a blank line at another place), or only blanks in view — each side says which
  // line it is, numbered as git's hunk headers number it (P30).
  const bool same_text = s.found && t.found && s.origin == t.origin && s.line == t.line;
  const auto unclear = [&](const Found& f) {
    return f.found && (same_text || shows_only_blanks(f.line, focus_of(f)));
  };
  const bool place = unclear(s) || unclear(t);
  const auto side = [&](const Found& f) {
    if (!f.found) return std::string("(none)");
    std::string shown = style(line_excerpt(f.origin, f.line, focus_of(f)));
    if (place)
      shown += std::string(f.origin == '+' ? " (new line " : " (old line ") +
               std::to_string(f.line_number) + ")";
    return shown;
  };
  return "source " + side(s) + " · target " + side(t);
}

std::vector<std::string> first_line_excerpts(const PatchLines& lines) {
  std::vector<std::string> out;
  if (lines.deleted.size() > 0) out.push_back(line_excerpt('-', lines.deleted.line(0)));
  if (lines.added.size() > 0) out.push_back(line_excerpt('+', lines.added.line(0)));
  return out;
}

}  // namespace portdiff
