#pragma once

#include "diff/file_change.h"
#include "git_handle.h"

namespace portdiff {

/// Stage 3 — collect lines per file: reads both ends of every delta of `diff` from
/// the object database and turns it into a FileChange (see file_change.h for what
/// is kept and diff_rule.h for how text is read).
SidePatch collect_lines(git_repository* repo, git_diff* diff);

}  // namespace portdiff
