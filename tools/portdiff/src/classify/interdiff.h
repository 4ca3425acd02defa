#pragma once

#include "classify/classify.h"
#include "diff/file_change.h"

#include <cstddef>
#include <vector>

namespace portdiff {

/*
 * Interdiff: two patches of one file compared line by line as sequences — the
 * added lines of one with the added lines of the other, deleted with deleted —
 * by a longest common subsequence, so a line only one side added (or deleted)
 * stands out wherever it sits, instead of lines being paired by position (P19).
 * Its counts size a `different` row (P20): lines in common, and lines only the
 * source or only the target has.
 */
struct Interdiff final {
  // Per line of each sequence: true when the other side has no match for it.
  std::vector<bool> source_added, source_deleted, target_added, target_deleted;
  std::size_t common = 0;
  std::size_t source_only = 0;
  std::size_t target_only = 0;
};

Interdiff interdiff(const PatchLines& source, const PatchLines& target);

/// Stage 4c — size: the interdiff counts of every `different` row whose sides both
/// have lines (FileVerdict::size), for the report to rank them by.
void size_differences(std::vector<FileVerdict>& rows);

}  // namespace portdiff
