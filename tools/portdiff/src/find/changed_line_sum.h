#pragma once

#include <git2.h>

#include <cstdint>

namespace portdiff {

/*
 * Note [Changed-line sum]
 * The changed-lines rule (same_changed_lines) needs each commit's -U0 reading, a
 * diff of its own beside the `git show` diff the patch-id is read from: on a large
 * file, half of `find`'s time (P29). Most commits it is asked about are no port,
 * and the `git show` diff can say so. Every exact diff of two blobs adds and
 * deletes the same lines counted as a multiset (each line +1 where added, -1 where
 * deleted: the new blob's lines minus the old blob's), and the rule calls two
 * patches the same only when every file is identical, i.e. its reading (git's or
 * the region's, both exact) has the same lines on both sides. Summed over the
 * files, that multiset no longer depends on how the files pair (by path, as a
 * rename, by content), so two patches the rule calls the same have equal sums over
 * their `git show` diffs too. Here the multiset is summed as a hash of each
 * line (added minus deleted, mod 2^64): different sums prove the changed lines
 * differ, and only then is the -U0 reading skipped; equal sums prove nothing.
 * A file libgit2 calls binary has no lines in the sum, while the report may still
 * read it as text, so a sum with such a file rules nothing out.
 */

/// The changed-line sum of one commit's `git show` diff, added to file by file.
class ChangedLineSum final {
 public:
  /// Adds one file's patch (from git_patch_from_diff).
  void add(git_patch* patch);

  /// Whether the changed-lines rule could still call the two commits the same:
  /// false only when both sums are complete and differ.
  bool may_match(const ChangedLineSum& other) const {
    return !complete_ || !other.complete_ || sum_ == other.sum_;
  }

 private:
  std::uint64_t sum_ = 0;
  bool complete_ = true;  // false once a file was left out as binary
};

}  // namespace portdiff
