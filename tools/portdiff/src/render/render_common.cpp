#include "diff/side_diff.h"
#include "git_handle.h"
#include "render/excerpt.h"
#include "render/markdown_text.h"
#include "render/quote.h"
#include "render/render.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace portdiff {

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::identical:
      return "identical";
    case Verdict::different:
      return "different";
    case Verdict::only_source:
      return "only-source";
    case Verdict::only_target:
      return "only-target";
  }
  return "";
}

const char* difference_name(Difference difference) {
  switch (difference) {
    case Difference::none:
      return "";
    case Difference::kind:
      return "kind";
    case Difference::rename_origin:
      return "rename-origin";
    case Difference::mode:
      return "mode";
    case Difference::binary:
      return "binary";
    case Difference::final_newline:
      return "final-newline";
    case Difference::line_endings:
      return "line-endings";
    case Difference::trailing_whitespace:
      return "trailing-whitespace";
    case Difference::lines:
      return "lines";
  }
  return "";
}

const char* difference_description(Difference difference) {
  switch (difference) {
    case Difference::none:
      return "";
    case Difference::kind:
      return "different kind of change";
    case Difference::rename_origin:
      return "renamed from different paths";
    case Difference::mode:
      return "file mode differs";
    case Difference::binary:
      return "binary content differs";
    case Difference::final_newline:
      return "only the final newline differs";
    case Difference::line_endings:
      return "only line endings (CRLF/LF) differ";
    case Difference::trailing_whitespace:
      return "only trailing whitespace differs";
    case Difference::lines:
      return "changed lines differ";
  }
  return "";
}

std::string plural(std::size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

namespace {

/// The code point at `at` and its length in bytes; an invalid byte reads as itself.
std::pair<char32_t, std::size_t> decode(const std::string& text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  const std::size_t length = lead < 0x80           ? 1
                             : (lead >> 5) == 0x6  ? 2
                             : (lead >> 4) == 0xE  ? 3
                             : (lead >> 3) == 0x1E ? 4
                                                   : 0;
  if (length == 0 || at + length > text.size()) return {lead, 1};
  char32_t point = length == 1 ? lead : lead & (0x7F >> length);
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) return {lead, 1};
    point = (point << 6) | (byte(at + i) & 0x3F);
  }
  return {point, length};
}

/// Columns one code point takes (Unicode 15's East Asian Width W and F, roughly
/// as wcwidth has them; combining marks and joiners take none).
std::size_t columns(char32_t c) {
  if ((c >= 0x0300 && c <= 0x036F) || (c >= 0x200B && c <= 0x200F) || c == 0x2060 ||
      (c >= 0xFE00 && c <= 0xFE0F) || (c >= 0xE0100 && c <= 0xE01EF))
    return 0;
  const bool wide =
      (c >= 0x1100 && c <= 0x115F) || (c >= 0x231A && c <= 0x231B) ||
      (c >= 0x2329 && c <= 0x232A) || (c >= 0x23E9 && c <= 0x23EC) || c == 0x23F0 || c == 0x23F3 ||
      (c >= 0x25FD && c <= 0x25FE) || (c >= 0x2614 && c <= 0x2615) ||
      (c >= 0x2648 && c <= 0x2653) || c == 0x267F || c == 0x2693 || c == 0x26A1 ||
      (c >= 0x26AA && c <= 0x26AB) || (c >= 0x26BD && c <= 0x26BE) ||
      (c >= 0x26C4 && c <= 0x26C5) || c == 0x26CE || c == 0x26D4 || c == 0x26EA ||
      (c >= 0x26F2 && c <= 0x26F3) || c == 0x26F5 || c == 0x26FA || c == 0x26FD || c == 0x2705 ||
      (c >= 0x270A && c <= 0x270B) || c == 0x2728 || c == 0x274C || c == 0x274E ||
      (c >= 0x2753 && c <= 0x2755) || c == 0x2757 || (c >= 0x2795 && c <= 0x2797) || c == 0x27B0 ||
      c == 0x27BF || (c >= 0x2B1B && c <= 0x2B1C) || c == 0x2B50 || c == 0x2B55 ||
      (c >= 0x2E80 && c <= 0x303E) || (c >= 0x3041 && c <= 0x33FF) ||
      (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
      (c >= 0xA000 && c <= 0xA4CF) || (c >= 0xA960 && c <= 0xA97F) ||
      (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) ||
      (c >= 0xFE10 && c <= 0xFE19) || (c >= 0xFE30 && c <= 0xFE6F) ||
      (c >= 0xFF00 && c <= 0xFF60) || (c >= 0xFFE0 && c <= 0xFFE6) ||
      (c >= 0x16FE0 && c <= 0x18CFF) || (c >= 0x1B000 && c <= 0x1B2FF) || c == 0x1F004 ||
      c == 0x1F0CF || c == 0x1F18E || (c >= 0x1F191 && c <= 0x1F19A) ||
      (c >= 0x1F200 && c <= 0x1F2FF) || (c >= 0x1F300 && c <= 0x1F320) ||
      (c >= 0x1F32D && c <= 0x1F335) || (c >= 0x1F337 && c <= 0x1F37C) ||
      (c >= 0x1F37E && c <= 0x1F393) || (c >= 0x1F3A0 && c <= 0x1F3CA) ||
      (c >= 0x1F3CF && c <= 0x1F3D3) || (c >= 0x1F3E0 && c <= 0x1F3F0) || c == 0x1F3F4 ||
      (c >= 0x1F3F8 && c <= 0x1F43E) || c == 0x1F440 || (c >= 0x1F442 && c <= 0x1F4FC) ||
      (c >= 0x1F4FF && c <= 0x1F53D) || (c >= 0x1F54B && c <= 0x1F54E) ||
      (c >= 0x1F550 && c <= 0x1F567) || c == 0x1F57A || (c >= 0x1F595 && c <= 0x1F596) ||
      c == 0x1F5A4 || (c >= 0x1F5FB && c <= 0x1F64F) || (c >= 0x1F680 && c <= 0x1F6C5) ||
      c == 0x1F6CC || (c >= 0x1F6D0 && c <= 0x1F6D2) || (c >= 0x1F6D5 && c <= 0x1F6D7) ||
      (c >= 0x1F6DC && c <= 0x1F6DF) || (c >= 0x1F6EB && c <= 0x1F6EC) ||
      (c >= 0x1F6F4 && c <= 0x1F6FC) || (c >= 0x1F7E0 && c <= 0x1F7EB) || c == 0x1F7F0 ||
      (c >= 0x1F90C && c <= 0x1F93A) || (c >= 0x1F93C && c <= 0x1F945) ||
      (c >= 0x1F947 && c <= 0x1F9FF) || (c >= 0x1FA70 && c <= 0x1FAFF) ||
      (c >= 0x20000 && c <= 0x2FFFD) || (c >= 0x30000 && c <= 0x3FFFD);
  return wide ? 2 : 1;
}

}  // namespace

std::size_t display_width(const std::string& text) {
  std::size_t width = 0;
  for (std::size_t at = 0; at < text.size();) {
    const auto [point, length] = decode(text, at);
    width += columns(point);
    at += length;
  }
  return width;
}

std::string cut_to_width(const std::string& text, std::size_t width) {
  std::size_t used = 0, at = 0;
  while (at < text.size()) {
    const auto [point, length] = decode(text, at);
    if (used + columns(point) > width) break;
    used += columns(point);
    at += length;
  }
  return text.substr(0, at);
}

std::size_t character_count(const std::string& text) {
  std::size_t count = 0;
  for (std::size_t at = 0; at < text.size(); ++count) at += decode(text, at).second;
  return count;
}

const char* kind_name(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::added:
      return "added";
    case ChangeKind::deleted:
      return "deleted";
    case ChangeKind::modified:
      return "modified";
    case ChangeKind::renamed:
      return "renamed";
    case ChangeKind::typechange:
      return "typechange";
  }
  return "";
}

const char* effect_name(PatchEffect effect) {
  switch (effect) {
    case PatchEffect::absent:
      return "absent";
    case PatchEffect::untouched:
      return "untouched";
    case PatchEffect::added:
      return "added";
    case PatchEffect::changed:
      return "changed";
  }
  return "";
}

std::string counts(const FileChange& change) {
  if (change.binary) return "binary";
  return "+" + std::to_string(change.lines.added.size()) + "/-" +
         std::to_string(change.lines.deleted.size());
}

std::string octal_mode(std::uint32_t mode) {
  char text[16];
  std::snprintf(text, sizeof text, "%06o", static_cast<unsigned>(mode));
  return text;
}

std::string header_notes(const FileChange& change, const NameStyle& name) {
  switch (change.kind) {
    case ChangeKind::added:
      return "new file " + octal_mode(change.new_mode);
    case ChangeKind::deleted:
      return "deleted file";
    case ChangeKind::renamed: {
      std::string note = "renamed from " + name(change.old_path);
      if (change.old_mode != change.new_mode)
        note += ", mode " + octal_mode(change.old_mode) + "→" + octal_mode(change.new_mode);
      return note;
    }
    case ChangeKind::typechange:
    case ChangeKind::modified:
      if (change.old_mode == change.new_mode) return "";
      return std::string(change.kind == ChangeKind::typechange ? "type change " : "mode ") +
             octal_mode(change.old_mode) + "→" + octal_mode(change.new_mode);
  }
  return "";
}

namespace {

std::string header_pair(const FileVerdict& row, const NameStyle& name) {
  const std::string s = row.source ? header_notes(*row.source, name) : "";
  const std::string t = row.target ? header_notes(*row.target, name) : "";
  if (!row.source || !row.target || s == t) return s.empty() ? t : s;
  // A side without a header note still says what its patch did ("modified").
  return "source: " + (s.empty() ? kind_name(row.source->kind) : s) +
         "; target: " + (t.empty() ? kind_name(row.target->kind) : t);
}

}  // namespace

std::string pairing_note(const FileVerdict& row, const NameStyle& name) {
  switch (row.pairing) {
    case Pairing::path:
      return "";
    case Pairing::mapped:
      return "source path " + name(row.source_path) + " (--map-path)";
    case Pairing::content:
      return "paired by content with source " + name(row.source_path);
  }
  return "";
}

std::string other_head_note(const FileVerdict& row, const NameStyle& name) {
  if (!row.other_head.checked) return "";
  const bool source_only = row.verdict == Verdict::only_source;
  const std::string head = source_only ? "target head" : "source head";
  const std::string where = row.other_path == row.path ? "" : " as " + name(row.other_path);
  if (!row.other_head.exists) return "absent at the " + head + where;
  const FileChange& change = source_only ? *row.source : *row.target;
  std::string note = "exists at the " + head + where;
  if (!change.binary && change.lines.added.size() > 0)
    note += ", holding " + std::to_string(row.other_head.held) + " of the " +
            plural(change.lines.added.size(), "added line");
  if (!change.binary && change.lines.deleted.size() > 0)
    note += std::string(change.lines.added.size() > 0 ? " and" : ",") + " still holding " +
            std::to_string(row.other_head.held_deleted) + " of the " +
            plural(change.lines.deleted.size(), "deleted line");
  return note;
}

std::string row_notes(const FileVerdict& row, const NameStyle& name) {
  std::string out;
  for (const std::string& note :
       {pairing_note(row, name), header_pair(row, name), other_head_note(row, name)})
    if (!note.empty()) out += (out.empty() ? "" : "; ") + note;
  return out;
}

std::string first_difference(const FileVerdict& row, const ExcerptStyle& excerpt) {
  if (row.verdict != Verdict::different) return "";
  const bool line_level =
      row.difference == Difference::final_newline || row.difference == Difference::line_endings ||
      row.difference == Difference::trailing_whitespace || row.difference == Difference::lines;
  return line_level ? first_difference_excerpt(row.source->lines, row.target->lines, excerpt) : "";
}

std::string row_remarks(const FileVerdict& row, const ExcerptStyle& words,
                        const ExcerptStyle& excerpt) {
  std::string out;
  const auto add = [&](const std::string& text) {
    if (!text.empty()) out += (out.empty() ? "" : "; ") + text;
  };
  const std::string first = first_difference(row, excerpt);
  if (!first.empty()) add(words("first difference: ") + first);
  if (row.by_region)
    add(
        words("same edit, which git -U0 aligns differently on the two baselines (region "
              "reading: +" +
              std::to_string(row.region_added) + "/-" + std::to_string(row.region_deleted) +
              " on both sides)"));
  if (!row.final_note.empty()) {
    std::string note = words(row.final_note);
    for (const std::string& line : row.final_excerpts) note += " " + excerpt(line);
    add(note);
  }
  return out;
}

std::vector<const FileVerdict*> rows_of(const Report& report, Verdict verdict) {
  std::vector<const FileVerdict*> rows;
  for (const FileVerdict& row : report.files)
    if (row.verdict == verdict) rows.push_back(&row);
  if (verdict != Verdict::different) return rows;
  // Largest first: where a reviewer has most to read. Unsized (binary) rows last.
  const auto weight = [](const FileVerdict* row) {
    return row->size.known ? row->size.source_only + row->size.target_only + 1 : 0;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const FileVerdict* a, const FileVerdict* b) {
    return weight(a) > weight(b);
  });
  return rows;
}

std::string size_text(const FileVerdict& row) {
  if (!row.size.known) return "";
  return std::to_string(row.size.common) + " common, " + std::to_string(row.size.source_only) +
         " source-only, " + std::to_string(row.size.target_only) + " target-only";
}

std::string side_name(const ResolvedRange& range, const char* side) {
  return range.named ? range.label : side;
}

std::string markdown_range(const ResolvedRange& range, const char* side) {
  std::string out = std::string("- ") + side + " " + code_text(range.label);
  if (range.named && range.label != range.spec) out += " (" + code_text(range.spec) + ")";
  out += ": `" + to_hex(range.base) + ".." + to_hex(range.head) + "` — " +
         plural(range.commits.size(), "commit") + "\n";
  for (std::size_t i = 0; i < range.commits.size() && i < header_commits; ++i)
    out += "  - `" + to_hex(range.commits[i].id).substr(0, 12) + "` " +
           md_text(range.commits[i].subject) + "\n";
  if (range.commits.size() > header_commits)
    out += "  - … and " + std::to_string(range.commits.size() - header_commits) + " more\n";
  return out;
}

std::string text_commits(const ResolvedRange& range, const std::string& indent) {
  std::string out;
  for (std::size_t i = 0; i < range.commits.size() && i < header_commits; ++i)
    out += indent + to_hex(range.commits[i].id).substr(0, 12) + "  " +
           quote(range.commits[i].subject) + "\n";
  if (range.commits.size() > header_commits)
    out += indent + "... and " + std::to_string(range.commits.size() - header_commits) + " more\n";
  return out;
}

std::string verdict_line(const Report& report) {
  const Totals& t = report.totals;
  const bool identical = t.identical == t.files;
  return std::string("Verdict: ") + (identical ? "identical" : "not identical") + " — " +
         plural(t.files, "file") + ": " + std::to_string(t.identical) +
         " identical (final files equal: " + std::to_string(t.identical_final_equal) + "), " +
         std::to_string(t.different) + " different, " + std::to_string(t.only_source) +
         " only-source, " + std::to_string(t.only_target) + " only-target";
}

std::string with_size_note(const std::string& markdown, bool brief) {
  // GitHub, the largest host, cuts pull request descriptions at 65,536 characters.
  constexpr std::size_t limit = 65536;
  const std::size_t size = character_count(markdown);
  if (size <= limit) return markdown;
  std::string digits = std::to_string(size);
  for (std::size_t at = digits.size(); at > 3; at -= 3) digits.insert(at - 3, ",");
  const std::string note =
      "> **Note:** this report is " + digits +
      " characters long, more than the 65,536 a pull request description holds on the "
      "largest host" +
      (brief ? "; attach it as a file instead."
             : "; `--brief` keeps only the verdict and the rows that are not identical.") +
      "\n\n";
  // Under the verdict line, the first paragraph that ends in bold.
  const std::size_t verdict_end = markdown.find(".**\n\n");
  std::string out = markdown;
  out.insert(verdict_end == std::string::npos ? 0 : verdict_end + 5, note);
  return out;
}

std::string trim_line_ends(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\n')
      while (!out.empty() && out.back() == ' ') out.pop_back();
    out += c;
  }
  return out;
}

std::string diff_settings_sentence(const Report& report) {
  return std::string("git's -U0 reading (libgit2's xdiff, algorithm ") + DiffSettings::algorithm +
         (DiffSettings::indent_heuristic ? " with the indent heuristic" : "") + ", " +
         std::to_string(DiffSettings::context_lines) +
         " context lines, after git's common-tail trim), the region reading where git's "
         "readings differ, no whitespace or end-of-line normalisation, no attributes, renames " +
         (report.find_renames ? "detected (--find-renames)"
                              : "off (a rename is a delete plus an add)");
}

}  // namespace portdiff
