#pragma once

#include "git_handle.h"
#include "options.h"
#include "ranges/range.h"

#include <git2.h>

#include <set>
#include <string>
#include <vector>

namespace portdiff {

/*
 * Stage 2 — diff each side: the tree diff gives the list of files a patch touches
 * (deltas: paths, modes, blob ids, renames); stage 3 then reads each file's lines
 * with the rule of diff_rule.h. Both sides go through the same fixed configuration
 * so their patches are comparable; the report states it (DiffSettings).
 *   - Myers, as libgit2 and git default to; not minimal, not patience.
 *   - The indent heuristic on, as `git diff` has it on by default, so hunks slide
 *     the way a reviewer sees them in git.
 *   - Zero context lines, zero inter-hunk lines: a patch is exactly its added and
 *     deleted lines.
 *   - No whitespace or end-of-line option: every byte counts.
 *   - Type changes as one delta (not a delete plus an add of the same path).
 *   - Renames only with --find-renames (git_diff_find_similar, default threshold).
 *   - No attributes: binary means a NUL in the first 8000 bytes (content.h).
 * Tree to tree, so no filters (autocrlf, smudge) touch the blobs.
 */
struct DiffSettings final {
  static constexpr const char* algorithm = "myers";
  static constexpr bool indent_heuristic = true;
  static constexpr int context_lines = 0;
};

/// With `paths` (every path the range changes, both sides of a rename), only those
/// are diffed: the same diff, without walking the rest of the trees.
DiffPtr diff_range(git_repository* repo, const ResolvedRange& range, const Options& options,
                   const std::set<std::string>* paths = nullptr);

/// Limits `options` to exactly `paths` (no globs); `storage` holds the pointers
/// libgit2 reads, into `paths`' strings, and must outlive the diff call.
void limit_to_paths(git_diff_options& options, const std::set<std::string>& paths,
                    std::vector<char*>& storage);

}  // namespace portdiff
