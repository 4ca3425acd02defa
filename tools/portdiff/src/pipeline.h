#pragma once

#include "options.h"
#include "report.h"

#include <vector>

namespace portdiff {

/// Runs the pipeline in order: resolve ranges → diff each side → collect lines per
/// file → classify → realign → final files → scan test functions, for the source
/// against each target (one Report per target, in order). Every range is diffed
/// once, all of them concurrently. Rendering is the caller's last step.
std::vector<Report> build_reports(const Options& options);

/// True when every file of the union is identical (the --check condition).
bool all_identical(const Report& report);

}  // namespace portdiff
