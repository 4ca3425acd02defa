#pragma once

#include "diff/content.h"
#include "diff/file_change.h"

#include <cstddef>
#include <string_view>

namespace portdiff {

/*
 * Note [Stable diff rule]
 * One edit can be read as more than one patch: where xdiff's Myers puts a hunk among
 * alignments of equal cost depends on lines far from the edit, because its
 * "too many matches" cut-off counts every line of both files (P2: the same edit
 * over a baseline with 56 tail lines cut reads +21/-15 instead of +19/-13).
 * Portdiff therefore has two readings of a modified text file:
 *
 *  - git's reading, the one every count shows: exactly what `git diff -U0` prints.
 *    With zero context git first drops the common tail of the two blobs in
 *    1024-byte blocks (keeping the bytes of the last dropped block up to its first
 *    newline), then runs xdiff (Myers, indent heuristic) on the rest. libgit2 runs
 *    the same xdiff without that trim, so portdiff trims as git does and diffs the
 *    buffers itself.
 *  - the region reading: xdiff of only what lies between the longest common prefix
 *    and the longest common suffix (whole lines) of the two blobs. Nothing outside
 *    the edit reaches the diff, so the same edit reads the same on any baseline.
 *
 * Two sides are identical when git's readings agree byte for byte, or else when
 * their region readings do (stage realign). Every byte counts either way; and the
 * verdict is stable, because the region reading cannot see the baselines. git's own
 * -U0 reading is not stable (its tail trim works in blocks and it counts the top
 * of the file), which is why counts and verdict are allowed to come from different
 * readings: an identical row may show different git counts on its two sides.
 */

/// Bytes `git diff -U0` drops from the end of both buffers before it diffs them.
std::size_t git_trimmed_tail(std::string_view a, std::string_view b);

/// git's -U0 reading of a text change from `old_end` to `new_end`. Both are taken,
/// not borrowed: each is freed once the diff holds its own copy, which keeps a
/// large file's peak memory at what `git diff -U0` holds (P29).
PatchLines read_git(Content old_end, Content new_end);

/// The region reading (see the Note); takes both ends as read_git does.
PatchLines read_region(Content old_end, Content new_end);

/// Every line of `text`, each pushed with `origin` ('+' or '-'): a whole-file
/// addition or deletion, and either half of a type change (git shows it as both).
void push_all_lines(std::string_view text, char origin, PatchLines& lines);

}  // namespace portdiff
