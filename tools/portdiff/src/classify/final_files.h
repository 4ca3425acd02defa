#pragma once

#include "classify/classify.h"
#include "git_handle.h"

#include <vector>

namespace portdiff {

/// Stage 4d — final files. For every identical row whose final files differ (the
/// same change on different baselines), diffs the source head's file against the
/// target head's with git's -U0 reading and says how they differ: "+1/-1 between
/// final files: blank lines only". An identical change need not give identical
/// files (the README's "Rules"), and a reviewer must see why.
void describe_final_files(git_repository* repo, std::vector<FileVerdict>& rows);

}  // namespace portdiff
