#include "pipeline.h"

#include <future>

#include "collect.h"
#include "final_files.h"
#include "realign.h"
#include "git_handle.h"
#include "side_diff.h"

namespace portdiff {
namespace {

/// Diffs and collects one side on its own repository handle: the two sides are
/// independent, and libgit2 handles must not be shared between threads.
SidePatch patch_of(const Options& options, const ResolvedRange& range) {
  RepositoryPtr repo = open_repository(options.repo);
  return collect_lines(repo.get(), diff_range(repo.get(), range, options).get());
}

}  // namespace

Report build_report(const Options& options) {
  RepositoryPtr repo = open_repository(options.repo);

  Report report;
  report.find_renames = options.find_renames;
  report.source = resolve_range(repo.get(), options.source, "source");
  report.target = resolve_range(repo.get(), options.targets.at(0), "target");

  // The two sides run concurrently when libgit2 was built thread-safe (Debian's
  // is); an Error in the target thread is rethrown here by get().
  if (git_libgit2_features() & GIT_FEATURE_THREADS) {
    auto target = std::async(std::launch::async, patch_of, std::cref(options),
                             std::cref(report.target));
    report.source_patch = patch_of(options, report.source);
    report.target_patch = target.get();
  } else {
    report.source_patch = patch_of(options, report.source);
    report.target_patch = patch_of(options, report.target);
  }

  report.files = classify(report.source_patch, report.target_patch);
  realign(repo.get(), report.files);
  describe_final_files(repo.get(), report.files);
  report.totals = count(report.files);

  report.tests = compare_test_functions(repo.get(), report.source, report.target, report.files,
                                        options);
  return report;
}

bool all_identical(const Report& report) {
  return report.totals.identical == report.totals.files;
}

}  // namespace portdiff
