#pragma once

#include "options.h"
#include "report.h"

#include <vector>

namespace portdiff {

/// Runs the pipeline in order: resolve ranges → diff each side → collect lines per
/// file → classify → realign → final files → scan test functions, for the source
/// against each target (one Report per target, in order). Every range is diffed
/// once, all of them concurrently. Rendering is the caller's last step.
std::vector<Report> build_reports(const Options& options);

/// The stages after the diff for one pair whose patches are already collected
/// (classify → realign → size → final files → other heads → test functions): what
/// build_reports() does for each target, for callers that hold the patches.
Report compare_patches(git_repository* repo, const ResolvedRange& source,
                       const ResolvedRange& target, std::shared_ptr<const SidePatch> source_patch,
                       std::shared_ptr<const SidePatch> target_patch, const Options& options);

/// `portdiff find`: find_ports() on `options.repo`, then with --report build_reports()
/// of COMMIT against the port add_port_targets() picks on each branch. Raises
/// Error as those do (no branch matched; with --report, no port to compare).
FindReport build_find_report(Options options);

}  // namespace portdiff
