#pragma once

#include <vector>

#include "classify/classify.h"
#include "git_handle.h"

namespace portdiff {

/// Stage 4c — final files. For every identical row whose final files differ (the
/// same change on different baselines), diffs the source head's file against the
/// target head's with git's -U0 reading and says how they differ, as seed 002's
/// report does by hand: "+1/-1 between final files: blank lines only".
void describe_final_files(git_repository* repo, std::vector<FileVerdict>& rows);

}  // namespace portdiff
