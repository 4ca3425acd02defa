#pragma once

#include "options.h"
#include "report.h"

namespace portdiff {

/// Runs the pipeline in order: resolve ranges → diff each side → collect lines per
/// file → classify → scan test functions. Rendering is the caller's last step.
Report build_report(const Options& options);

/// True when every file of the union is identical (the --check condition).
bool all_identical(const Report& report);

}  // namespace portdiff
