#pragma once

#include "classify/classify.h"
#include "git_handle.h"

#include <vector>

namespace portdiff {

/// Stage 4b — realign. A row that is different only in its lines, where both
/// sides modify a text file, is read again on both sides with the region rule;
/// equal region readings make it identical (Note [Stable diff rule] in
/// diff_rule.h). Runs only on such rows, so identical ports cost nothing extra.
void realign(git_repository* repo, std::vector<FileVerdict>& rows);

}  // namespace portdiff
