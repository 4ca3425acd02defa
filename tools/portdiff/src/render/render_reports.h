#pragma once

#include "options.h"
#include "report.h"

#include <string>
#include <vector>

namespace portdiff {

/// Stage 6 — render the comparison build_reports() made, in `options.format`: the
/// pair report for one target, the matrix (render_matrix.h) for several.
std::string render_reports(const std::vector<Report>& reports, const Options& options);

}  // namespace portdiff
