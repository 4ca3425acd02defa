#pragma once

#include "classify/classify.h"
#include "diff/file_change.h"
#include "find/find.h"
#include "ranges/range.h"
#include "test_scan/test_functions.h"

#include <memory>
#include <vector>

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

/// True when every file of the union is identical (the --check condition).
inline bool all_identical(const Report& report) {
  return report.totals.identical == report.totals.files;
}

/*
 * FindReport: what `portdiff find` reports, produced by build_find_report() — the
 * ports of COMMIT on each matched branch, and with --report the comparison of
 * COMMIT with one port per branch that has one.
 */
struct FindReport final {
  FindResult found;
  std::vector<Report> reports;  // one per compared port, in branch order; empty without --report
};

}  // namespace portdiff
