#include "classify/classify.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
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
    const bool same =
        s.binary && t.binary && equal_ids(s.old_id, t.old_id) && equal_ids(s.new_id, t.new_id);
    return same ? Difference::none : Difference::binary;
  }
  if (s.lines == t.lines) return Difference::none;
  for (Normalisation level : {Normalisation::final_newline, Normalisation::line_endings,
                              Normalisation::trailing_whitespace}) {
    if (equal_under(s.lines.added, t.lines.added, level) &&
        equal_under(s.lines.deleted, t.lines.deleted, level)) {
      switch (level) {
        case Normalisation::final_newline:
          return Difference::final_newline;
        case Normalisation::line_endings:
          return Difference::line_endings;
        case Normalisation::trailing_whitespace:
          return Difference::trailing_whitespace;
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

std::string map_path(const std::string& path, const std::vector<PathMap>& maps, bool to_target) {
  for (const PathMap& map : maps) {
    const std::string& from = to_target ? map.source : map.target;
    const std::string& to = to_target ? map.target : map.source;
    if (path == from) return to;
    if (path.size() > from.size() && path.compare(0, from.size(), from) == 0 &&
        path[from.size()] == '/')
      return to + path.substr(from.size());
  }
  return path;
}

namespace {

std::string_view file_name(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

/// Lines the two patches share (added with added, deleted with deleted, as
/// multisets) over the lines of the larger patch: 1 for identical changed lines.
double similarity(const PatchLines& a, const PatchLines& b) {
  std::size_t common = 0;
  for (const auto& [x, y] : {std::pair{&a.added, &b.added}, std::pair{&a.deleted, &b.deleted}}) {
    std::unordered_map<std::string_view, std::size_t> counts;
    for (std::size_t i = 0; i < x->size(); ++i) ++counts[x->line(i)];
    for (std::size_t i = 0; i < y->size(); ++i) {
      auto found = counts.find(y->line(i));
      if (found != counts.end() && found->second > 0) {
        --found->second;
        ++common;
      }
    }
  }
  const std::size_t larger =
      std::max(a.added.size() + a.deleted.size(), b.added.size() + b.deleted.size());
  return larger == 0 ? 0.0 : static_cast<double>(common) / static_cast<double>(larger);
}

FileVerdict paired_row(const FileChange& s, const FileChange& t, Pairing pairing) {
  FileVerdict row;
  row.path = t.path;
  row.source_path = s.path;
  row.pairing = pairing;
  row.source = &s;
  row.target = &t;
  row.difference = compare_changes(s, t);
  row.verdict = row.difference == Difference::none ? Verdict::identical : Verdict::different;
  row.final_equal = equal_ids(s.new_id, t.new_id) && s.new_mode == t.new_mode;
  return row;
}

/// How many path components the two paths share from the end: 3 for
/// `a/ns/col/galaxy.yml` and `b/ns/col/galaxy.yml`, 1 for `.../failure/galaxy.yml`.
std::size_t common_tail_components(std::string_view a, std::string_view b) {
  std::size_t common = 0;
  while (!a.empty() && !b.empty()) {
    const std::string_view x = file_name(a), y = file_name(b);
    if (x != y) break;
    ++common;
    a.remove_suffix(std::min(a.size(), x.size() + 1));
    b.remove_suffix(std::min(b.size(), y.size() + 1));
  }
  return common;
}

/// P17: an only-source row and an only-target row of the same file name whose
/// changed lines are the same, or mostly the same, are one file that moved.
/// Greedy: the partner whose path agrees most pairs first (P27: two moved
/// `galaxy.yml` files of similar content), then the most similar lines.
void pair_by_content(std::vector<FileVerdict>& rows) {
  constexpr double enough = 0.5;
  struct Candidate final {
    std::size_t path_agreement;
    double score;
    std::size_t source_row, target_row;
  };
  std::unordered_multimap<std::string_view, std::size_t> targets_by_name;
  for (std::size_t j = 0; j < rows.size(); ++j)
    if (rows[j].verdict == Verdict::only_target && !rows[j].target->binary)
      targets_by_name.emplace(file_name(rows[j].path), j);
  std::vector<Candidate> candidates;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].verdict != Verdict::only_source || rows[i].source->binary) continue;
    const auto [begin, end] = targets_by_name.equal_range(file_name(rows[i].path));
    for (auto it = begin; it != end; ++it) {
      const double score = similarity(rows[i].source->lines, rows[it->second].target->lines);
      if (score >= enough)
        candidates.push_back(
            {common_tail_components(rows[i].path, rows[it->second].path), score, i, it->second});
    }
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.path_agreement != b.path_agreement) return a.path_agreement > b.path_agreement;
    if (a.score != b.score) return a.score > b.score;
    return std::pair(a.source_row, a.target_row) < std::pair(b.source_row, b.target_row);
  });
  std::vector<bool> used(rows.size(), false);
  for (const Candidate& c : candidates) {
    if (used[c.source_row] || used[c.target_row]) continue;
    used[c.source_row] = used[c.target_row] = true;
    rows[c.target_row] =
        paired_row(*rows[c.source_row].source, *rows[c.target_row].target, Pairing::content);
  }
  std::vector<FileVerdict> kept;
  kept.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (!(used[i] && rows[i].verdict == Verdict::only_source)) kept.push_back(std::move(rows[i]));
  rows = std::move(kept);
}

}  // namespace

std::vector<FileVerdict> classify(const SidePatch& source, const SidePatch& target,
                                  const std::vector<PathMap>& maps) {
  // One hash lookup per target file keeps this linear in the size of the union.
  std::unordered_map<std::string, const FileChange*> source_by_path;
  source_by_path.reserve(source.size());
  // A source file at the target's very path wins over one mapped onto it.
  for (const FileChange& change : source)
    if (map_path(change.path, maps, true) == change.path)
      source_by_path.emplace(change.path, &change);
  for (const FileChange& change : source)
    source_by_path.emplace(map_path(change.path, maps, true), &change);
  std::unordered_set<const FileChange*> paired;

  std::vector<FileVerdict> verdicts;
  verdicts.reserve(source.size() + target.size());
  for (const FileChange& t : target) {
    auto found = source_by_path.find(t.path);
    if (found == source_by_path.end() || paired.count(found->second) != 0) {
      FileVerdict row;
      row.path = t.path;
      row.other_path = map_path(t.path, maps, false);
      row.target = &t;
      row.verdict = Verdict::only_target;
      verdicts.push_back(std::move(row));
      continue;
    }
    const FileChange& s = *found->second;
    paired.insert(&s);
    verdicts.push_back(paired_row(s, t, s.path == t.path ? Pairing::path : Pairing::mapped));
  }
  // Every source change not paired is a row of its own, even one whose mapped
  // path collided with another's.
  for (const FileChange& s : source) {
    if (paired.count(&s) != 0) continue;
    FileVerdict row;
    row.path = row.source_path = s.path;
    row.other_path = map_path(s.path, maps, true);
    row.verdict = Verdict::only_source;
    row.source = &s;
    verdicts.push_back(std::move(row));
  }
  pair_by_content(verdicts);
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
      case Verdict::different:
        ++totals.different;
        break;
      case Verdict::only_source:
        ++totals.only_source;
        break;
      case Verdict::only_target:
        ++totals.only_target;
        break;
    }
  }
  return totals;
}

}  // namespace portdiff
