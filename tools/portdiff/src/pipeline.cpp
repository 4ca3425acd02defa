#include "pipeline.h"

#include "classify/final_files.h"
#include "classify/interdiff.h"
#include "classify/other_head.h"
#include "classify/realign.h"
#include "diff/collect.h"
#include "diff/side_diff.h"
#include "find/find.h"
#include "git_handle.h"

#include <future>

namespace portdiff {
namespace {

using SharedPatch = std::shared_ptr<const SidePatch>;

/// Diffs and collects one side on its own repository handle: the sides are
/// independent, and libgit2 handles must not be shared between threads.
SharedPatch patch_of(const Options& options, const ResolvedRange& range) {
  RepositoryPtr repo = open_repository(options.repo);
  return std::make_shared<const SidePatch>(
      collect_lines(repo.get(), diff_range(repo.get(), range, options).get()));
}

/// Every range's patch, in order; concurrently when libgit2 was built thread-safe
/// (Debian's is). An Error in any thread is rethrown here by get().
std::vector<SharedPatch> patches_of(const Options& options,
                                    const std::vector<ResolvedRange>& ranges) {
  std::vector<SharedPatch> patches;
  if (!(git_libgit2_features() & GIT_FEATURE_THREADS)) {
    for (const ResolvedRange& range : ranges) patches.push_back(patch_of(options, range));
    return patches;
  }
  std::vector<std::future<SharedPatch>> running;
  for (std::size_t i = 1; i < ranges.size(); ++i)
    running.push_back(
        std::async(std::launch::async, patch_of, std::cref(options), std::cref(ranges[i])));
  patches.push_back(patch_of(options, ranges[0]));
  for (auto& future : running) patches.push_back(future.get());
  return patches;
}

}  // namespace

std::vector<Report> build_reports(const Options& options) {
  RepositoryPtr repo = open_repository(options.repo);

  std::vector<ResolvedRange> ranges;  // the source, then each target
  ranges.push_back(resolve_range(repo.get(), options.source, "source"));
  for (std::size_t i = 0; i < options.targets.size(); ++i) {
    const std::string side =
        options.targets.size() == 1 ? "target" : "target " + std::to_string(i + 1);
    ranges.push_back(resolve_range(repo.get(), options.targets[i], side));
    if (i < options.target_labels.size()) {
      ranges.back().label = options.target_labels[i];
      ranges.back().named = true;
      if (i < options.target_hints.size() && options.target_hints[i]) {
        ranges.back().hint = true;
        ranges.back().label += " (hint)";
      }
    }
  }
  for (std::size_t i = 0; i < options.labels.size() && i < ranges.size(); ++i) {
    ranges[i].label = options.labels[i];
    ranges[i].named = true;
  }
  for (ResolvedRange& range : ranges) list_commits(repo.get(), range);
  const std::vector<SharedPatch> patches = patches_of(options, ranges);

  std::vector<Report> reports;
  for (std::size_t i = 1; i < ranges.size(); ++i)
    reports.push_back(
        compare_patches(repo.get(), ranges[0], ranges[i], patches[0], patches[i], options));
  return reports;
}

Report compare_patches(git_repository* repo, const ResolvedRange& source,
                       const ResolvedRange& target, std::shared_ptr<const SidePatch> source_patch,
                       std::shared_ptr<const SidePatch> target_patch, const Options& options) {
  Report report;
  report.find_renames = options.find_renames;
  report.source = source;
  report.target = target;
  report.source_patch = std::move(source_patch);
  report.target_patch = std::move(target_patch);
  report.files = classify(*report.source_patch, *report.target_patch, options.path_maps);
  realign(repo, report.files);
  size_differences(report.files);
  describe_final_files(repo, report.files);
  describe_other_heads(repo, report.source, report.target, report.files);
  report.totals = count(report.files);
  report.tests = compare_test_functions(repo, report.source, report.target, report.files, options);
  return report;
}

FindReport build_find_report(Options options) {
  FindReport report;
  {
    RepositoryPtr repo =
        open_repository(options.repo);  // closed before the comparison opens its own
    report.found = find_ports(repo.get(), options);
  }
  if (options.find_report) {
    add_port_targets(report.found, options);
    report.reports = build_reports(options);
  }
  return report;
}

}  // namespace portdiff
