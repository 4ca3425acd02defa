#pragma once

#include <memory>
#include <vector>

#include "classify/classify.h"
#include "diff/file_change.h"
#include "ranges/range.h"
#include "test_scan/test_functions.h"

namespace portdiff {

/*
 * Report: one comparison, source against one target — everything the renderers
 * print, produced by build_reports(). The side patches are shared and immutable,
 * because the verdicts point into them and a matrix diffs its source only once
 * for all its targets.
 */
struct Report final {
  ResolvedRange source;
  ResolvedRange target;
  bool find_renames = false;
  std::shared_ptr<const SidePatch> source_patch;
  std::shared_ptr<const SidePatch> target_patch;
  std::vector<FileVerdict> files;
  Totals totals;
  std::vector<TestFileComparison> tests;
};

}  // namespace portdiff
