#include "classify.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

namespace portdiff {
namespace {

enum class Normalisation { final_newline, line_endings, trailing_whitespace };

std::string normalise(std::string_view line, Normalisation level) {
  std::string out(line);
  if (out.empty() || out.back() != '\n') out.push_back('\n');
  if (level == Normalisation::final_newline) return out;
  out.pop_back();
  if (!out.empty() && out.back() == '\r') out.pop_back();
  if (level == Normalisation::trailing_whitespace) {
    while (!out.empty() && (out.back() == ' ' || out.back() == '\t' || out.back() == '\r'))
      out.pop_back();
  }
  out.push_back('\n');
  return out;
}

bool equal_under(const LineSeq& a, const LineSeq& b, Normalisation level) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (normalise(a.line(i), level) != normalise(b.line(i), level)) return false;
  return true;
}

bool equal_ids(const git_oid& a, const git_oid& b) { return git_oid_equal(&a, &b) != 0; }

/// What a patch did to the mode: (old, new) when it changed it, (0, 0) when not.
/// A deletion removes whatever mode the baseline had, so it changes nothing here.
std::pair<std::uint32_t, std::uint32_t> mode_change(const FileChange& c) {
  if (c.kind == ChangeKind::deleted || c.old_mode == c.new_mode) return {0, 0};
  return {c.old_mode, c.new_mode};
}

/// The difference in the content of the change, header aside.
Difference content_difference(const FileChange& s, const FileChange& t) {
  if (s.binary || t.binary) {
    const bool same = s.binary && t.binary && equal_ids(s.old_id, t.old_id) &&
                      equal_ids(s.new_id, t.new_id);
    return same ? Difference::none : Difference::binary;
  }
  if (s.lines == t.lines) return Difference::none;
  for (Normalisation level : {Normalisation::final_newline, Normalisation::line_endings,
                              Normalisation::trailing_whitespace}) {
    if (equal_under(s.lines.added, t.lines.added, level) &&
        equal_under(s.lines.deleted, t.lines.deleted, level)) {
      switch (level) {
        case Normalisation::final_newline: return Difference::final_newline;
        case Normalisation::line_endings: return Difference::line_endings;
        case Normalisation::trailing_whitespace: return Difference::trailing_whitespace;
      }
    }
  }
  return Difference::lines;
}

}  // namespace

bool mode_changes_differ(const FileChange& source, const FileChange& target) {
  return mode_change(source) != mode_change(target);
}

Difference compare_changes(const FileChange& s, const FileChange& t) {
  if (s.kind != t.kind) return Difference::kind;
  if (s.kind == ChangeKind::renamed && s.old_path != t.old_path) return Difference::rename_origin;
  // Lines before modes: a mode note must never hide a line difference (P10).
  const Difference content = content_difference(s, t);
  if (content != Difference::none) return content;
  return mode_changes_differ(s, t) ? Difference::mode : Difference::none;
}

std::vector<FileVerdict> classify(const SidePatch& source, const SidePatch& target) {
  // One hash lookup per target file keeps this linear in the size of the union.
  std::unordered_map<std::string_view, const FileChange*> source_by_path;
  source_by_path.reserve(source.size());
  for (const FileChange& change : source) source_by_path.emplace(change.path, &change);

  std::vector<FileVerdict> verdicts;
  verdicts.reserve(source.size() + target.size());
  for (const FileChange& t : target) {
    FileVerdict row;
    row.path = t.path;
    row.target = &t;
    auto found = source_by_path.find(t.path);
    if (found == source_by_path.end()) {
      row.verdict = Verdict::only_target;
    } else {
      const FileChange& s = *found->second;
      source_by_path.erase(found);
      row.source = &s;
      row.difference = compare_changes(s, t);
      row.verdict = row.difference == Difference::none ? Verdict::identical : Verdict::different;
      row.final_equal = equal_ids(s.new_id, t.new_id) && s.new_mode == t.new_mode;
    }
    verdicts.push_back(std::move(row));
  }
  for (const FileChange& s : source) {
    if (source_by_path.count(s.path) == 0) continue;  // already paired with a target change
    FileVerdict row;
    row.path = s.path;
    row.verdict = Verdict::only_source;
    row.source = &s;
    verdicts.push_back(std::move(row));
  }
  std::sort(verdicts.begin(), verdicts.end(),
            [](const FileVerdict& a, const FileVerdict& b) { return a.path < b.path; });
  return verdicts;
}

Totals count(const std::vector<FileVerdict>& verdicts) {
  Totals totals;
  totals.files = verdicts.size();
  for (const FileVerdict& row : verdicts) {
    if (row.source) ++totals.source_files;
    if (row.target) ++totals.target_files;
    switch (row.verdict) {
      case Verdict::identical:
        ++totals.identical;
        if (row.final_equal) ++totals.identical_final_equal;
        break;
      case Verdict::different: ++totals.different; break;
      case Verdict::only_source: ++totals.only_source; break;
      case Verdict::only_target: ++totals.only_target; break;
    }
  }
  return totals;
}

}  // namespace portdiff
