#include "find/find.h"

#include "error.h"
#include "find/branches.h"
#include "find/patch_id.h"
#include "find/port_rules.h"
#include "find/progress.h"
#include "find/reach.h"
#include "ranges/ancestry.h"

#include <algorithm>
#include <optional>
#include <set>

namespace portdiff {
namespace {

/// Whether the commit changes every one of `paths` (blob, mode or presence):
/// a few tree lookups that spare a diff for almost every commit of a history.
bool touches_all(git_tree* tree, git_tree* parent_tree, const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    git_tree_entry *before_raw = nullptr, *after_raw = nullptr;
    const int before_found = git_tree_entry_bypath(&before_raw, parent_tree, path.c_str());
    const int after_found = git_tree_entry_bypath(&after_raw, tree, path.c_str());
    TreeEntryPtr before(before_found == 0 ? before_raw : nullptr);
    TreeEntryPtr after(after_found == 0 ? after_raw : nullptr);
    if (!before && !after) return false;
    if (before && after &&
        git_tree_entry_filemode(before.get()) == git_tree_entry_filemode(after.get()) &&
        git_oid_equal(git_tree_entry_id(before.get()), git_tree_entry_id(after.get())))
      return false;
  }
  return true;
}

}  // namespace

FindResult find_ports(git_repository* repo, const Options& options) {
  FindResult found;
  git_object* object_raw = nullptr;
  check(git_revparse_single(&object_raw, repo, options.find_commit.c_str()),
        "unknown revision in COMMIT '" + options.find_commit + "'" + shallow_hint(repo));
  ObjectPtr object(object_raw);
  git_object* peeled_raw = nullptr;
  check(git_object_peel(&peeled_raw, object.get(), GIT_OBJECT_COMMIT),
        "COMMIT '" + options.find_commit + "' is not a commit");
  ObjectPtr peeled(peeled_raw);
  found.commit = *git_object_id(peeled.get());
  CommitPtr commit = lookup_commit(repo, found.commit);
  found.parents = git_commit_parentcount(commit.get());
  if (found.parents == 0)
    throw Error("COMMIT '" + options.find_commit +
                "' is a root commit: it has no parent to take its patch against");
  const std::vector<git_oid> boundary = shallow_boundary(repo);
  if (at_boundary(boundary, found.commit))
    throw Error("COMMIT '" + options.find_commit +
                "' is at the shallow boundary: its parent, which its patch is taken "
                "against, is not in this clone" +
                shallow_hint(repo));
  const char* summary = git_commit_summary(commit.get());
  found.subject = summary == nullptr ? "" : summary;
  const std::string subject = bare_subject(found.subject);
  const DiffPtr diff = show_diff(repo, commit.get());
  const std::set<std::string> paths = paths_of(diff.get());
  const std::vector<std::string> path_list(paths.begin(), paths.end());
  ChangedLineSum sum;
  found.has_patch_id = stable_patch_id(repo, diff.get(), found.patch_id, &sum);
  std::optional<SidePatch> lines;  // the report's reading, made when a candidate needs it
  const std::string hex = to_hex(found.commit);

  const std::vector<Branch> branches = matching_branches(repo, options.branch_globs);
  if (branches.empty()) {
    std::string globs;
    for (const std::string& glob : options.branch_globs)
      globs += (globs.empty() ? "'" : ", '") + glob + "'";
    throw Error("no branch (local or remote-tracking) matches --branches " + globs);
  }

  // One walk over the union of the branches visits every commit once, however
  // many branches share it.
  std::vector<git_oid> tips;
  for (const Branch& branch : branches) tips.push_back(branch.tip);
  const std::vector<git_oid> candidates = walk_history(repo, tips, found.commit, boundary);

  std::vector<std::pair<Port, std::size_t>> ports;  // and where walked; newest first
  std::vector<std::size_t> ends;                    // where walked: the boundary commits
  Reach reach(candidates, branches);
  Progress progress(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    progress.tick(i + 1);
    if (at_boundary(boundary, candidates[i])) {
      // Its parents are not here: nothing flows on, and its patch cannot be taken.
      ends.push_back(i);
      found.history_ends.push_back(candidates[i]);
      continue;
    }
    CommitPtr candidate = lookup_commit(repo, candidates[i]);
    reach.flow(i, candidate.get(), found.commit);
    if (git_commit_parentcount(candidate.get()) != 1) continue;
    Port port;
    port.commit = candidates[i];
    port.by_trailer = names_in_trailer(git_commit_message(candidate.get()), hex);
    const char* candidate_summary = git_commit_summary(candidate.get());
    port.by_subject = !subject.empty() && candidate_summary != nullptr &&
                      bare_subject(candidate_summary) == subject;
    // The patch rules need the same files; tree lookups rule out almost every
    // commit before any diff is made.
    git_tree* tree_raw = nullptr;
    check(git_commit_tree(&tree_raw, candidate.get()), "reading a tree");
    TreePtr tree(tree_raw);
    TreePtr parent_tree = commit_tree(repo, *git_commit_parent_id(candidate.get(), 0));
    if (!path_list.empty() && touches_all(tree.get(), parent_tree.get(), path_list)) {
      const DiffPtr candidate_diff = show_diff(repo, candidate.get());
      if (paths_of(candidate_diff.get()) == paths) {
        git_oid candidate_id;
        ChangedLineSum candidate_sum;
        const bool has_id =
            stable_patch_id(repo, candidate_diff.get(), candidate_id, &candidate_sum);
        port.by_patch_id =
            found.has_patch_id && has_id && git_oid_equal(&candidate_id, &found.patch_id) != 0;
        // The -U0 readings only where the sums leave it open (Note [Changed-line sum]).
        if (sum.may_match(candidate_sum)) {
          if (!lines) lines = report_patch(repo, commit.get(), options);
          port.by_changed_lines =
              same_changed_lines(repo, *lines, report_patch(repo, candidate.get(), options));
        }
      }
    }
    if (port.evidence() || port.by_subject) ports.emplace_back(port, i);
  }

  for (std::size_t b = 0; b < branches.size(); ++b) {
    BranchPorts& entry = found.branches.emplace_back();
    entry.branch = branches[b].name;
    entry.twins = branches[b].twins;
    entry.contains_commit =
        git_oid_equal(&branches[b].tip, &found.commit) != 0 || reach.reaches_target(b);
    for (std::size_t end : ends)
      if (reach.reaches(end, b)) entry.history_ends.push_back(candidates[end]);
  }
  // Each port goes to one branch that contains it, its home; the others inherited
  // it. The home is where the port was committed (P31): a branch with the port on
  // its first-parent line — not one it reached by a merge — and of those the
  // trunk (what HEAD names: release branches fork from it, so a port made there
  // before they forked is the trunk's), else the first in version order. A branch
  // that contains COMMIT needs no port: only evidence is listed there, never a
  // same-subject hint (a recurring subject, a later change; case P25).
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
      if (b != home) found.branches[b].inherited.push_back({port.commit, branches[home].name});
  }
  return found;
}

const Port* compared_port(const BranchPorts& branch, bool hints) {
  // A branch that contains COMMIT has no port to compare (case P25).
  if (branch.contains_commit) return nullptr;
  const auto best = std::find_if(branch.ports.begin(), branch.ports.end(),
                                 [](const Port& port) { return port.evidence(); });
  if (best != branch.ports.end()) return &*best;
  // A same-subject hint is compared only when asked (--hints).
  return hints && !branch.ports.empty() ? &branch.ports.front() : nullptr;
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
