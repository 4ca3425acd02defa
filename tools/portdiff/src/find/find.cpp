#include "find/find.h"

#include "error.h"
#include "find/branches.h"
#include "find/progress.h"
#include "find/reach.h"
#include "ranges/ancestry.h"

#include <algorithm>
#include <utility>

namespace portdiff {
namespace {

/// A port found by the walk, and where: its index among the walked commits.
using WalkedPort = std::pair<Port, std::size_t>;

/// Step 1: COMMIT, which must have a parent in this clone to take its patch against.
PortCommit resolve_commit(git_repository* repo, const Options& options,
                          const std::vector<git_oid>& boundary, FindResult& found) {
  git_object* object_raw = nullptr;
  check(git_revparse_single(&object_raw, repo, options.find_commit.c_str()),
        "unknown revision in COMMIT '" + options.find_commit + "'" + shallow_hint(repo));
  ObjectPtr object(object_raw);
  git_object* peeled_raw = nullptr;
  check(git_object_peel(&peeled_raw, object.get(), GIT_OBJECT_COMMIT),
        "COMMIT '" + options.find_commit + "' is not a commit");
  ObjectPtr peeled(peeled_raw);
  found.commit = *git_object_id(peeled.get());
  found.parents = git_commit_parentcount(lookup_commit(repo, found.commit).get());
  if (found.parents == 0)
    throw Error("COMMIT '" + options.find_commit +
                "' is a root commit: it has no parent to take its patch against");
  if (at_boundary(boundary, found.commit))
    throw Error("COMMIT '" + options.find_commit +
                "' is at the shallow boundary: its parent, which its patch is taken "
                "against, is not in this clone" +
                shallow_hint(repo));
  PortCommit wanted(repo, found.commit);
  found.subject = wanted.subject();
  found.has_patch_id = wanted.patch_id(repo, found.patch_id);
  found.unresolved = wanted.unresolved();
  return wanted;
}

/// Step 2: the branches the globs match; none is an error.
std::vector<Branch> branches_to_search(git_repository* repo, const Options& options) {
  std::vector<Branch> branches = matching_branches(repo, options.branch_globs);
  if (branches.empty()) {
    std::string globs;
    for (const std::string& glob : options.branch_globs)
      globs += (globs.empty() ? "'" : ", '") + glob + "'";
    throw Error("no branch (local or remote-tracking) matches --branches " + globs);
  }
  return branches;
}

/// Step 4: every walked commit matched with COMMIT, in walk order (newest first),
/// while the branches' reach flows down the walk. A boundary commit is recorded in
/// `ends`: its parents are not here, so nothing flows on and its patch cannot be
/// taken. Merges are never ports.
std::vector<WalkedPort> match_walk(git_repository* repo, PortCommit& wanted,
                                   const std::vector<git_oid>& walked,
                                   const std::vector<git_oid>& boundary, const Options& options,
                                   Reach& reach, std::vector<std::size_t>& ends) {
  std::vector<WalkedPort> ports;
  Progress progress(walked.size());
  for (std::size_t i = 0; i < walked.size(); ++i) {
    progress.tick(i + 1);
    if (at_boundary(boundary, walked[i])) {
      ends.push_back(i);
      continue;
    }
    CommitPtr commit = lookup_commit(repo, walked[i]);
    reach.flow(i, commit.get(), wanted.id());
    if (git_commit_parentcount(commit.get()) != 1) continue;
    PortCommit candidate(repo, walked[i]);
    Port port = match_port(repo, wanted, candidate, options);
    if (port.evidence() || port.by_subject) ports.emplace_back(std::move(port), i);
  }
  return ports;
}

/// Step 5: one entry per branch, in version order: whether it contains COMMIT,
/// and where its history ends in a shallow clone.
void list_branches(const std::vector<Branch>& branches, const std::vector<git_oid>& walked,
                   const Reach& reach, const std::vector<std::size_t>& ends, FindResult& found) {
  for (std::size_t end : ends) found.history_ends.push_back(walked[end]);
  for (std::size_t b = 0; b < branches.size(); ++b) {
    BranchPorts& entry = found.branches.emplace_back();
    entry.branch = branches[b].name;
    entry.twins = branches[b].twins;
    entry.contains_commit =
        git_oid_equal(&branches[b].tip, &found.commit) != 0 || reach.reaches_target(b);
    for (std::size_t end : ends)
      if (reach.reaches(end, b)) entry.history_ends.push_back(walked[end]);
  }
}

/// Step 6: each port goes to one branch that contains it, its home; the others
/// inherited it. The home is where the port was committed (P31): a branch with the
/// port on its first-parent line — not one it reached by a merge — and of those
/// the trunk (what HEAD names: release branches fork from it, so a port made there
/// before they forked is the trunk's), else the first in version order. A branch
/// that contains COMMIT needs no port: it lists only evidence, never a
/// same-subject hint (a recurring subject, a later change; case P25), and no port
/// it inherited by a merge (it holds the original, case P47).
void assign_homes(const std::vector<WalkedPort>& ports, const std::vector<Branch>& branches,
                  const Reach& reach, FindResult& found) {
  for (const auto& [port, walked] : ports) {
    std::vector<std::size_t> holders;
    for (std::size_t b = 0; b < branches.size(); ++b)
      if (reach.reaches(walked, b) && (!found.branches[b].contains_commit || port.evidence()))
        holders.push_back(b);
    if (holders.empty()) continue;
    const auto rank = [&, at = walked](std::size_t b) {
      return (reach.on_first_parent_line(at, b) ? 0 : 2) + (branches[b].trunk ? 0 : 1);
    };
    const std::size_t home =
        *std::min_element(holders.begin(), holders.end(), [&](std::size_t a, std::size_t b) {
          return rank(a) != rank(b) ? rank(a) < rank(b) : a < b;
        });
    found.branches[home].ports.push_back(port);
    for (std::size_t b : holders)
      if (b != home && !found.branches[b].contains_commit)
        found.branches[b].inherited.push_back({port.commit, branches[home].name});
  }
}

}  // namespace

FindResult find_ports(git_repository* repo, const Options& options) {
  FindResult found;
  const std::vector<git_oid> boundary = shallow_boundary(repo);
  PortCommit wanted = resolve_commit(repo, options, boundary, found);
  const std::vector<Branch> branches = branches_to_search(repo, options);
  // Step 3: one walk over the union of the branches visits every commit once,
  // however many branches share it.
  std::vector<git_oid> tips;
  for (const Branch& branch : branches) tips.push_back(branch.tip);
  const std::vector<git_oid> walked = walk_history(repo, tips, found.commit, boundary);
  Reach reach(walked, branches);
  std::vector<std::size_t> ends;
  const std::vector<WalkedPort> ports =
      match_walk(repo, wanted, walked, boundary, options, reach, ends);
  list_branches(branches, walked, reach, ends, found);
  assign_homes(ports, branches, reach, found);
  return found;
}

const Port* compared_port(const BranchPorts& branch, bool hints) {
  // A branch that contains COMMIT has no port to compare (case P25).
  if (branch.contains_commit) return nullptr;
  return choose_port(branch.ports, hints);
}
void add_port_targets(const FindResult& found, Options& options) {
  options.source = to_hex(found.commit);
  options.targets.clear();
  options.target_labels.clear();
  options.target_hints.clear();
  std::size_t hint_only = 0;
  for (const BranchPorts& branch : found.branches) {
    const Port* port = compared_port(branch, options.find_hints);
    if (port == nullptr) {
      if (!branch.contains_commit && !branch.ports.empty()) ++hint_only;
      continue;
    }
    options.targets.push_back(to_hex(port->commit));
    options.target_labels.push_back(branch.branch);
    options.target_hints.push_back(!port->evidence());
  }
  if (options.targets.empty())
    throw Error("no port of " + to_hex(found.commit).substr(0, 12) +
                " on the branches --branches matched: nothing to compare" +
                (hint_only == 0 ? std::string()
                                : " (" + std::to_string(hint_only) +
                                      (hint_only == 1 ? " branch has" : " branches have") +
                                      " only a same-subject hint; --hints compares it)"));
}

}  // namespace portdiff
