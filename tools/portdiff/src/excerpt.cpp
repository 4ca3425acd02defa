#include "excerpt.h"

#include "quote.h"

namespace portdiff {
namespace {

constexpr std::size_t max_bytes = 60;

/// Walks a patch's lines in patch order.
class PatchCursor final {
 public:
  explicit PatchCursor(const PatchLines& lines) : lines_(lines) {}
  bool done() const { return at_ >= lines_.order.size(); }
  char origin() const { return lines_.order[at_]; }
  std::string_view line() const {
    return origin() == '+' ? lines_.added.line(added_) : lines_.deleted.line(deleted_);
  }
  void next() {
    ++(origin() == '+' ? added_ : deleted_);
    ++at_;
  }

 private:
  const PatchLines& lines_;  // not owned
  std::size_t at_ = 0, added_ = 0, deleted_ = 0;
};

std::string side_excerpt(const PatchCursor& cursor, const ExcerptStyle& style) {
  return cursor.done() ? "(none)" : style(line_excerpt(cursor.origin(), cursor.line()));
}

}  // namespace

std::string line_excerpt(char origin, std::string_view line) {
  if (line.size() <= max_bytes) return std::string(1, origin) + quote_always(line);
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  return std::string(1, origin) + quote_always(line.substr(0, cut)) + "...";
}

std::string first_difference_excerpt(const PatchLines& source, const PatchLines& target,
                                     const ExcerptStyle& style) {
  PatchCursor s(source), t(target);
  while (!s.done() && !t.done() && s.origin() == t.origin() && s.line() == t.line()) {
    s.next();
    t.next();
  }
  return "source " + side_excerpt(s, style) + " · target " + side_excerpt(t, style);
}

std::vector<std::string> first_line_excerpts(const PatchLines& lines) {
  std::vector<std::string> out;
  if (lines.deleted.size() > 0) out.push_back(line_excerpt('-', lines.deleted.line(0)));
  if (lines.added.size() > 0) out.push_back(line_excerpt('+', lines.added.line(0)));
  return out;
}

}  // namespace portdiff
