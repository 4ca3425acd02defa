#include "classify/realign.h"

#include "diff/content.h"
#include "diff/diff_rule.h"

#include <string_view>
#include <unordered_map>

namespace portdiff {
namespace {

bool line_level(Difference d) {
  return d == Difference::final_newline || d == Difference::line_endings ||
         d == Difference::trailing_whitespace || d == Difference::lines;
}

bool text_edit(const FileChange& change) {
  return (change.kind == ChangeKind::modified || change.kind == ChangeKind::renamed) &&
         !change.binary;
}

PatchLines region_of(git_repository* repo, const FileChange& change) {
  return read_region(read_content(repo, change.old_mode, change.old_id),
                     read_content(repo, change.new_mode, change.new_id));
}

/// Whether the two patches change the same multiset of lines: each line counted
/// +1 where added and -1 where deleted, over both sides (source minus target).
/// Every exact diff of two blobs has the same such count — the new blob's lines
/// minus the old blob's, as the lines in common cancel — and so does the region
/// reading, whose cut-off prefix and suffix are equal on both ends. So when the
/// counts differ, no reading makes the sides equal, and the region reading (two
/// more blob reads and a diff of nearly the whole file, P29) can be skipped.
bool same_net_lines(const PatchLines& source, const PatchLines& target) {
  std::unordered_map<std::string_view, long> net;
  net.reserve(source.added.size() + source.deleted.size());
  const auto add = [&](const LineSeq& lines, long sign) {
    for (std::size_t i = 0; i < lines.size(); ++i) net[lines.line(i)] += sign;
  };
  add(source.added, 1);
  add(source.deleted, -1);
  add(target.added, -1);
  add(target.deleted, 1);
  for (const auto& entry : net)
    if (entry.second != 0) return false;
  return true;
}

}  // namespace

void realign(git_repository* repo, std::vector<FileVerdict>& rows) {
  for (FileVerdict& row : rows) {
    if (row.verdict != Verdict::different || !line_level(row.difference)) continue;
    if (!text_edit(*row.source) || !text_edit(*row.target)) continue;
    if (!same_net_lines(row.source->lines, row.target->lines)) continue;
    const PatchLines source = region_of(repo, *row.source);
    if (source != region_of(repo, *row.target)) continue;
    // Equal lines leave the mode as the only possible difference (classify's order).
    if (mode_changes_differ(*row.source, *row.target)) {
      row.difference = Difference::mode;
      continue;
    }
    row.verdict = Verdict::identical;
    row.difference = Difference::none;
    row.by_region = true;
    row.region_added = source.added.size();
    row.region_deleted = source.deleted.size();
  }
}

}  // namespace portdiff
