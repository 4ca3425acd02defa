#include "pipeline.h"

#include "collect.h"
#include "git_handle.h"
#include "side_diff.h"

namespace portdiff {

Report build_report(const Options& options) {
  RepositoryPtr repo = open_repository(options.repo);

  Report report;
  report.find_renames = options.find_renames;
  report.source = resolve_range(repo.get(), options.source, "source");
  report.target = resolve_range(repo.get(), options.target, "target");

  report.source_patch = collect_lines(diff_range(repo.get(), report.source, options).get());
  report.target_patch = collect_lines(diff_range(repo.get(), report.target, options).get());

  report.files = classify(report.source_patch, report.target_patch);
  report.totals = count(report.files);

  report.tests = compare_test_functions(repo.get(), report.source, report.target, report.files,
                                        options);
  return report;
}

bool all_identical(const Report& report) {
  return report.totals.identical == report.totals.files;
}

}  // namespace portdiff
