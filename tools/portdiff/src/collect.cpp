#include "collect.h"

#include <string>

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

void collect_hunk_lines(git_patch* patch, FileChange& change) {
  const std::size_t hunks = git_patch_num_hunks(patch);
  for (std::size_t h = 0; h < hunks; ++h) {
    const int lines = check(git_patch_num_lines_in_hunk(patch, h), "reading hunk");
    for (int l = 0; l < lines; ++l) {
      const git_diff_line* line = nullptr;
      check(git_patch_get_line_in_hunk(&line, patch, h, static_cast<std::size_t>(l)),
            "reading line of " + change.path);
      // The *_EOFNL origins only annotate the previous line, whose content already
      // lacks the '\n'; context lines do not occur with zero context.
      if (line->origin == GIT_DIFF_LINE_ADDITION)
        change.added.push(line->content, line->content_len);
      else if (line->origin == GIT_DIFF_LINE_DELETION)
        change.deleted.push(line->content, line->content_len);
    }
  }
}

}  // namespace

SidePatch collect_lines(git_diff* diff) {
  const std::size_t count = git_diff_num_deltas(diff);
  SidePatch files;
  files.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    git_patch* raw = nullptr;
    check(git_patch_from_diff(&raw, diff, i), "reading patch");
    PatchPtr patch(raw);
    // Read the delta after generating the patch: that is when libgit2 has loaded the
    // blobs and decided whether the file is binary.
    const git_diff_delta* delta = git_diff_get_delta(diff, i);

    FileChange change;
    change.kind = kind_of(delta->status);
    change.path = delta->status == GIT_DELTA_DELETED ? delta->old_file.path : delta->new_file.path;
    change.old_path = delta->old_file.path;
    change.old_mode = delta->old_file.mode;
    change.new_mode = delta->new_file.mode;
    change.old_id = delta->old_file.id;
    change.new_id = delta->new_file.id;
    change.binary = (delta->flags & GIT_DIFF_FLAG_BINARY) != 0 ||
                    delta->old_file.mode == GIT_FILEMODE_COMMIT ||
                    delta->new_file.mode == GIT_FILEMODE_COMMIT;
    if (patch && !change.binary) collect_hunk_lines(patch.get(), change);
    files.push_back(std::move(change));
  }
  return files;
}

}  // namespace portdiff
