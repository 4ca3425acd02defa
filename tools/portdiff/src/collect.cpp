#include "collect.h"

namespace portdiff {
namespace {

ChangeKind kind_of(git_delta_t status) {
  switch (status) {
    case GIT_DELTA_ADDED: return ChangeKind::added;
    case GIT_DELTA_DELETED: return ChangeKind::deleted;
    case GIT_DELTA_RENAMED: return ChangeKind::renamed;
    case GIT_DELTA_TYPECHANGE: return ChangeKind::typechange;
    default: return ChangeKind::modified;
  }
}

// git_diff_foreach calls these in order: the file callback once per delta, then the
// binary callback or the line callbacks of that delta. Each appends to the last
// FileChange. Streaming the lines (rather than building a git_patch per file and
// copying out of it) halves the allocations on large patches.

int on_file(const git_diff_delta* delta, float /*progress*/, void* payload) {
  SidePatch& files = *static_cast<SidePatch*>(payload);
  FileChange& change = files.emplace_back();
  change.kind = kind_of(delta->status);
  change.path = delta->status == GIT_DELTA_DELETED ? delta->old_file.path : delta->new_file.path;
  change.old_path = delta->old_file.path;
  change.old_mode = delta->old_file.mode;
  change.new_mode = delta->new_file.mode;
  change.old_id = delta->old_file.id;
  change.new_id = delta->new_file.id;
  // Submodules have no lines either; like binary files they compare by id.
  change.binary = (delta->flags & GIT_DIFF_FLAG_BINARY) != 0 ||
                  delta->old_file.mode == GIT_FILEMODE_COMMIT ||
                  delta->new_file.mode == GIT_FILEMODE_COMMIT;
  return 0;
}

int on_binary(const git_diff_delta* /*delta*/, const git_diff_binary* /*binary*/, void* payload) {
  static_cast<SidePatch*>(payload)->back().binary = true;
  return 0;
}

int on_line(const git_diff_delta* /*delta*/, const git_diff_hunk* /*hunk*/,
            const git_diff_line* line, void* payload) {
  FileChange& change = static_cast<SidePatch*>(payload)->back();
  // The *_EOFNL origins only annotate the previous line, whose content already
  // lacks the '\n'; context lines do not occur with zero context.
  if (line->origin == GIT_DIFF_LINE_ADDITION)
    change.added.push(line->content, line->content_len);
  else if (line->origin == GIT_DIFF_LINE_DELETION)
    change.deleted.push(line->content, line->content_len);
  return 0;
}

}  // namespace

SidePatch collect_lines(git_diff* diff) {
  SidePatch files;
  files.reserve(git_diff_num_deltas(diff));
  check(git_diff_foreach(diff, on_file, on_binary, nullptr, on_line, &files),
        "reading the patch");
  return files;
}

}  // namespace portdiff
