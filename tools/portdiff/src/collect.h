#pragma once

#include "file_change.h"
#include "git_handle.h"

namespace portdiff {

/// Stage 3 — collect lines per file: walks every delta of `diff` once and turns it
/// into a FileChange (see file_change.h for what is kept).
SidePatch collect_lines(git_diff* diff);

}  // namespace portdiff
