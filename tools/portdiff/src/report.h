#pragma once

#include <vector>

#include "classify.h"
#include "file_change.h"
#include "range.h"
#include "test_functions.h"

namespace portdiff {

/*
 * Report: everything the renderers print, produced by build_report(). It owns both
 * side patches because the verdicts point into them; it is therefore movable but
 * not copyable (a copy would leave the verdicts pointing into the original).
 */
struct Report final {
  Report() = default;
  Report(Report&&) = default;
  Report& operator=(Report&&) = default;
  Report(const Report&) = delete;
  Report& operator=(const Report&) = delete;

  ResolvedRange source;
  ResolvedRange target;
  bool find_renames = false;
  SidePatch source_patch;
  SidePatch target_patch;
  std::vector<FileVerdict> files;
  Totals totals;
  std::vector<TestFileComparison> tests;
};

}  // namespace portdiff
