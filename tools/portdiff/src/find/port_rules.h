#pragma once

#include "diff/file_change.h"
#include "options.h"

#include <git2.h>

#include <set>
#include <string>

namespace portdiff {

/*
 * The rules that make a commit a port of another, shared by `portdiff find` and
 * `portdiff audit` (find.h lists them): the cherry-pick trailer, the stable
 * patch-id (patch_id.h), the report's rule on the changed lines, and the subject
 * (a hint only).
 */

/// Whether `message` says "(cherry picked from commit X)" with X naming the
/// commit `commit_hex` (in full, or abbreviated to 7 or more hex digits).
bool names_in_trailer(const char* message, const std::string& commit_hex);

/// The subject without what ports add to it: leading "[tag] " markers and a
/// trailing " (#123)" pull request number.
std::string bare_subject(std::string subject);

/// Every path a diff names, old and new.
std::set<std::string> paths_of(git_diff* diff);

/// One commit's patch as the report reads it: against its first parent.
SidePatch report_patch(git_repository* repo, git_commit* commit, const Options& options);

/// The report's own rule on two patches: every file of the union identical.
bool same_changed_lines(git_repository* repo, const SidePatch& a, const SidePatch& b);

}  // namespace portdiff
