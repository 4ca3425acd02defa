#pragma once

#include "find/changed_line_sum.h"
#include "git_handle.h"

#include <git2.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace portdiff {

/*
 * A commit's patch as `git show` gives it to `git patch-id --stable`, and that
 * patch-id. `git show` finds renames by default (diff.renames: renames, not
 * copies, 50 % similarity), and its patch-id hashes the header lines too,
 * `similarity index 96%` included (case P28). libgit2 finds the renames, but
 * scores similarity its own way (97 % where git says 96 %), so each rename's score
 * is recomputed as git computes it (diffcore-delta's chunk hashes); and libgit2's
 * git_diff_patchid hashes each file apart where git's reading of the text does
 * not (a pure rename has no `---` line, so git hashes its header with the next
 * file), so the patch text is read here the way builtin/patch-id.c reads it.
 * Where the two rename detections disagree — a pair near the 50 % threshold, or
 * more candidates than the rename limit — the patch-ids differ (README).
 */

/// The commit's diff against its first parent: tree to tree, renames found. With
/// `paths` (every path the commit changes, both sides of a rename), only those are
/// diffed: the same diff, without walking the rest of the trees.
DiffPtr show_diff(git_repository* repo, git_commit* commit,
                  const std::set<std::string>* paths = nullptr);

/// git's similarity score of two blobs in percent, as `similarity index N%` prints it.
int git_similarity(git_repository* repo, const git_oid& old_blob, const git_oid& new_blob);

/// The stable patch-id of `diff` (from show_diff); false when git prints none
/// (an empty commit: nothing to hash). With `sum`, also adds each file's patch to
/// it while the patch is at hand (Note [Changed-line sum]).
bool stable_patch_id(git_repository* repo, git_diff* diff, git_oid& id,
                     ChangedLineSum* sum = nullptr);

/// `git patch-id --stable` of one patch's text (`git show` without its message).
bool patch_id_of_text(std::string_view patch, git_oid& id);

}  // namespace portdiff
