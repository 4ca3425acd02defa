#pragma once

#include "git_handle.h"
#include "match/matcher.h"
#include "options.h"

#include <git2.h>

#include <string>
#include <vector>

namespace portdiff {

/*
 * `portdiff find COMMIT --branches GLOB...`: the ports of one commit on release
 * branches, local or remote-tracking (`origin/release-*`). COMMIT's patch is against its
 * first parent, so a merge reads as `git cherry-pick -m1` would apply it. A commit
 * reachable from a branch and not from COMMIT (COMMIT's own history never counts;
 * merges are never ports) is a port when the port matcher says so (matcher.h:
 * marks, then the patch, then the subject as a hint), every rule that holds
 * recorded. A branch that contains COMMIT says so. A port that several matched
 * branches contain is listed on the one it was made on (first-parent line, then
 * the trunk, then version order), and as inherited on the others, so one commit
 * is compared once; a local branch and the remote-tracking branch it tracks, at
 * the same commit, are one row.
 * In a shallow clone the walk searches the history that is there and stops at the
 * boundary commits (.git/shallow), which it records, per branch too (case P26).
 * It runs as named steps (find.cpp): resolve COMMIT → the branches → walk them →
 * match each walked commit → list each branch → give each port its home.
 */
struct InheritedPort final {
  git_oid commit{};
  std::string from;  // the branch that lists it as its port
};

struct BranchPorts final {
  std::string branch;                    // short name: "release/2.9", "origin/release/2.9"
  bool contains_commit = false;          // COMMIT itself is in the branch's history
  std::vector<Port> ports;               // its own ports, newest first
  std::vector<InheritedPort> inherited;  // ports listed under the branch they were made on
  std::vector<std::string> twins;        // remote-tracking branches at the same commit it tracks
  /// In a shallow clone: the boundary commits (.git/shallow) this branch's history
  /// reaches, where the search ended; empty when it was searched to its roots.
  std::vector<git_oid> history_ends;
};

struct FindResult final {
  git_oid commit{};
  git_oid patch_id{};
  bool has_patch_id = true;  // false for an empty commit: git patch-id prints none
  std::string subject;
  std::size_t parents = 1;            // a merge has more; its patch is against the first
  std::vector<BranchPorts> branches;  // every branch the globs match, in version order
  /// A shallow clone's boundary commits that the walk reached (case P26): the
  /// history before them is not here, and their own patches cannot be taken (their
  /// parents are missing), so they are walked through but never ports.
  std::vector<git_oid> history_ends;
  /// COMMIT's marks that name no commit in the repository (Note [Port marks]).
  std::vector<CommitMark> unresolved;
  /// Whether the search was cut short: a branch's history ends at a shallow boundary.
  bool cut() const { return !history_ends.empty(); }
};

/// Raises Error when COMMIT is unknown, not a commit or a root commit, and when no
/// branch matches the globs.
FindResult find_ports(git_repository* repo, const Options& options);

/// The port --report compares on `branch`: choose_port() of its ports (the best
/// rule, then the newest; a same-subject hint only with `hints`, --hints); none
/// (nullptr) on a branch that contains COMMIT or has nothing to compare.
const Port* compared_port(const BranchPorts& branch, bool hints);

/// Sets `options` to compare COMMIT with compared_port() of each branch, labelled
/// by the branch (a hint marked in `target_hints`). Raises Error when there is none.
void add_port_targets(const FindResult& found, Options& options);

}  // namespace portdiff
