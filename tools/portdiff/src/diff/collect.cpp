#include "diff/collect.h"

#include "diff/content.h"
#include "diff/diff_rule.h"

#include <utility>

namespace portdiff {
namespace {

ChangeKind kind_of(git_delta_t status) {
  switch (status) {
    case GIT_DELTA_ADDED:
      return ChangeKind::added;
    case GIT_DELTA_DELETED:
      return ChangeKind::deleted;
    case GIT_DELTA_RENAMED:
      return ChangeKind::renamed;
    case GIT_DELTA_TYPECHANGE:
      return ChangeKind::typechange;
    default:
      return ChangeKind::modified;
  }
}

bool is_regular(std::uint32_t mode) {
  return mode == GIT_FILEMODE_BLOB || mode == GIT_FILEMODE_BLOB_EXECUTABLE;
}

}  // namespace

SidePatch collect_lines(git_repository* repo, git_diff* diff) {
  const std::size_t deltas = git_diff_num_deltas(diff);
  SidePatch files;
  files.reserve(deltas);
  for (std::size_t i = 0; i < deltas; ++i) {
    const git_diff_delta* delta = git_diff_get_delta(diff, i);
    FileChange& change = files.emplace_back();
    change.kind = kind_of(delta->status);
    change.path = delta->status == GIT_DELTA_DELETED ? delta->old_file.path : delta->new_file.path;
    change.old_path = delta->old_file.path;
    change.old_mode = delta->old_file.mode;
    change.new_mode = delta->new_file.mode;
    change.old_id = delta->old_file.id;
    change.new_id = delta->new_file.id;
    if (change.kind != ChangeKind::typechange && git_oid_equal(&change.old_id, &change.new_id))
      continue;  // a mode-only change has no lines

    // Both ends come from the object database: a work tree, its attributes and its
    // filters cannot change what a report pinned to SHAs says.
    Content old_content = read_content(repo, change.old_mode, change.old_id);
    Content new_content = read_content(repo, change.new_mode, change.new_id);
    const std::string_view old_text = old_content.text(), new_text = new_content.text();
    change.binary = (is_regular(change.old_mode) && looks_binary(old_text)) ||
                    (is_regular(change.new_mode) && looks_binary(new_text));
    if (change.binary) continue;
    switch (change.kind) {
      case ChangeKind::added:
        push_all_lines(new_text, '+', change.lines);
        break;
      case ChangeKind::deleted:
        push_all_lines(old_text, '-', change.lines);
        break;
      case ChangeKind::typechange:  // git shows a deletion of one type and an addition of the other
        push_all_lines(old_text, '-', change.lines);
        push_all_lines(new_text, '+', change.lines);
        break;
      case ChangeKind::modified:
      case ChangeKind::renamed:
        change.lines = read_git(std::move(old_content), std::move(new_content));
        break;
    }
  }
  return files;
}

}  // namespace portdiff
