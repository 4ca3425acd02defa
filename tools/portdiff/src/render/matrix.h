#pragma once

#include "report.h"

#include <string>
#include <vector>

namespace portdiff {

/*
 * Matrix: one change against all its ports — the union of the files of every
 * pair (source vs one target) as rows, the targets as columns. It does not own
 * the reports it indexes; they must outlive it.
 */
struct MatrixRow final {
  std::string path;
  const FileChange* source = nullptr;     // not owned; null when the source does not touch it
  std::vector<const FileVerdict*> cells;  // per target; null when neither side touches it
};

struct Matrix final {
  const std::vector<Report>* pairs = nullptr;  // not owned
  std::vector<MatrixRow> rows;                 // sorted by path (bytes)
};

Matrix build_matrix(const std::vector<Report>& pairs);

/// True when every pair is identical (the --check condition for a matrix).
bool all_identical(const Matrix& matrix);

}  // namespace portdiff
