#pragma once

#include <git2.h>

#include <string>
#include <vector>

#include "git_handle.h"
#include "options.h"
#include "report.h"

namespace portdiff {

/*
 * `portdiff find COMMIT --branches GLOB...`: the ports of one commit on release
 * branches. A commit on a branch (and not reachable from COMMIT, so COMMIT's own
 * history never counts) is a port when its message carries
 * "(cherry picked from commit <sha>)" naming COMMIT (what `git cherry-pick -x`
 * writes, conflict or not), or when its stable patch-id equals COMMIT's (what
 * `git patch-id --stable` computes: a clean cherry-pick without -x). Merges are
 * never ports.
 */
struct Port final {
  git_oid commit{};
  bool by_trailer = false;
  bool by_patch_id = false;
};

struct BranchPorts final {
  std::string branch;       // short name, e.g. "release/2.9"
  std::vector<Port> ports;  // newest first; empty when the branch has none
};

struct FindResult final {
  git_oid commit{};
  git_oid patch_id{};
  std::string subject;
  std::vector<BranchPorts> branches;  // every branch the globs match, by name
};

FindResult find_ports(git_repository* repo, const Options& options);

/// The listing in each format. JSON ("portdiff-find/1") also carries the report
/// of --report when `reports` is given: a pair report for one port, else a matrix.
std::string render_find_markdown(const FindResult& found);
std::string render_find_text(const FindResult& found);
std::string render_find_json(const FindResult& found, const std::vector<Report>* reports,
                             const Options& options);

/// The newest port on each branch that has one: the targets of find --report.
void add_port_targets(const FindResult& found, Options& options);

}  // namespace portdiff
