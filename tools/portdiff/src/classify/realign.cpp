#include "classify/realign.h"

#include "diff/content.h"
#include "diff/diff_rule.h"

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
  const Content old_content = read_content(repo, change.old_mode, change.old_id);
  const Content new_content = read_content(repo, change.new_mode, change.new_id);
  return read_region(old_content.text(), new_content.text());
}

}  // namespace

void realign(git_repository* repo, std::vector<FileVerdict>& rows) {
  for (FileVerdict& row : rows) {
    if (row.verdict != Verdict::different || !line_level(row.difference)) continue;
    if (!text_edit(*row.source) || !text_edit(*row.target)) continue;
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
