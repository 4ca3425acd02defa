#include "render/matrix.h"

#include <map>

namespace portdiff {

Matrix build_matrix(const std::vector<Report>& pairs) {
  Matrix matrix;
  matrix.pairs = &pairs;
  std::map<std::string, MatrixRow> by_path;  // byte order, like each pair's rows
  for (std::size_t t = 0; t < pairs.size(); ++t) {
    for (const FileVerdict& verdict : pairs[t].files) {
      MatrixRow& row = by_path[verdict.path];
      if (row.cells.empty()) {
        row.path = verdict.path;
        row.cells.assign(pairs.size(), nullptr);
      }
      row.cells[t] = &verdict;
      if (verdict.source) row.source = verdict.source;
    }
  }
  for (auto& [path, row] : by_path) matrix.rows.push_back(std::move(row));
  return matrix;
}

bool all_identical(const Matrix& matrix) {
  for (const Report& pair : *matrix.pairs)
    if (!all_identical(pair)) return false;
  return true;
}

}  // namespace portdiff
