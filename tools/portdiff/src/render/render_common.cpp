#include "diff/side_diff.h"
#include "git_handle.h"
#include "render/excerpt.h"
#include "render/markdown_text.h"
#include "render/quote.h"
#include "render/render.h"

#include <algorithm>
#include <cstdio>

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

std::size_t display_width(const std::string& text) {
  std::size_t width = 0;
  for (unsigned char c : text) width += (c & 0xC0) != 0x80;  // continuation bytes add nothing
  return width;
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
  const std::size_t size = display_width(markdown);
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
