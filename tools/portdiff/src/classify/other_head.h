#pragma once

#include "classify/classify.h"
#include "git_handle.h"
#include "ranges/range.h"

#include <vector>

namespace portdiff {

/// Stage 4e — other heads (P23). For each only-source (only-target) row: whether
/// the file exists at the target (source) head, at its --map-path path, and how
/// many of the side's added lines that file already holds — and how many of its
/// deleted lines that file still holds (P33: a deletion not made there). "Only the
/// source touched it" is not "the target lacks it".
void describe_other_heads(git_repository* repo, const ResolvedRange& source,
                          const ResolvedRange& target, std::vector<FileVerdict>& rows);

}  // namespace portdiff
