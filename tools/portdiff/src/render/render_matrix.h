#pragma once

#include "options.h"
#include "render/matrix.h"

#include <string>

namespace portdiff {

/// Stage 6 for several targets: the matrix of files × targets in each format.
/// The pair report's sections stay (purpose, rules with pinned SHAs, totals per
/// target, then the files); the JSON carries every pair's full report as well.
std::string render_matrix_markdown(const Matrix& matrix, const Options& options);
std::string render_matrix_json(const Matrix& matrix, const Options& options);
std::string render_matrix_text(const Matrix& matrix, const Options& options);

/// "Verdict: not identical — 3 targets: `r1` identical (2 files); `r2` ..." (no markup).
std::string matrix_verdict_line(const Matrix& matrix);

}  // namespace portdiff
