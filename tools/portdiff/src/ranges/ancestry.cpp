#include "ranges/ancestry.h"

#include "git_handle.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <queue>
#include <set>
#include <vector>

namespace portdiff {
namespace {

struct OidLess final {
  bool operator()(const git_oid& a, const git_oid& b) const { return git_oid_cmp(&a, &b) < 0; }
};
using OidSet = std::set<git_oid, OidLess>;

/// The boundary commits of a shallow clone (.git/shallow), empty otherwise.
OidSet shallow_roots(git_repository* repo) {
  OidSet roots;
  if (git_repository_is_shallow(repo) != 1) return roots;
  std::ifstream file(std::string(git_repository_commondir(repo)) + "shallow");
  std::string line;
  git_oid id;
  while (std::getline(file, line))
    if (git_oid_fromstrn(&id, line.c_str(), line.size()) == 0) roots.insert(id);
  return roots;
}

}  // namespace

// The lookups below do not go through check(): a commit that cannot be read is an
// answer here (it lies past the shallow boundary), not an error.

bool has_commit(git_repository* repo, const git_oid& id) {
  git_commit* raw = nullptr;
  if (git_commit_lookup(&raw, repo, &id) != 0) return false;
  CommitPtr commit(raw);
  return true;
}

Descent descends_from(git_repository* repo, const git_oid& head, const git_oid& base) {
  const OidSet roots = shallow_roots(repo);
  if (roots.empty()) {
    return check(git_graph_descendant_of(repo, &head, &base), "walking the history") == 1
               ? Descent::yes
               : Descent::no;
  }
  // A plain walk of head's ancestry that stops at the boundary: shallow clones are
  // short by construction, so the walk is too.
  bool cut = false;
  OidSet seen;
  std::vector<git_oid> todo{head};
  while (!todo.empty()) {
    const git_oid id = todo.back();
    todo.pop_back();
    if (!seen.insert(id).second) continue;
    if (roots.count(id) != 0) {
      cut = true;
      continue;
    }
    git_commit* raw = nullptr;
    if (git_commit_lookup(&raw, repo, &id) != 0) {
      cut = true;
      continue;
    }
    CommitPtr commit(raw);
    for (unsigned i = 0; i < git_commit_parentcount(commit.get()); ++i) {
      const git_oid parent = *git_commit_parent_id(commit.get(), i);
      if (git_oid_equal(&parent, &base)) return Descent::yes;
      todo.push_back(parent);
    }
  }
  return cut ? Descent::unknown : Descent::no;
}

namespace {

/// Every commit reachable from `tip` that this clone has, stopping at the boundary.
OidSet ancestry_within(git_repository* repo, const git_oid& tip, const OidSet& roots) {
  OidSet seen;
  std::vector<git_oid> todo{tip};
  while (!todo.empty()) {
    const git_oid id = todo.back();
    todo.pop_back();
    git_commit* raw = nullptr;
    if (seen.count(id) != 0 || git_commit_lookup(&raw, repo, &id) != 0) continue;
    CommitPtr commit(raw);
    seen.insert(id);
    if (roots.count(id) != 0) continue;
    for (unsigned i = 0; i < git_commit_parentcount(commit.get()); ++i)
      todo.push_back(*git_commit_parent_id(commit.get(), i));
  }
  return seen;
}

}  // namespace

std::vector<git_oid> commits_between(git_repository* repo, const git_oid& base,
                                     const git_oid& head) {
  std::vector<git_oid> commits;
  const OidSet roots = shallow_roots(repo);
  if (roots.empty()) {
    git_revwalk* raw = nullptr;
    check(git_revwalk_new(&raw, repo), "listing commits");
    RevwalkPtr walk(raw);
    check(git_revwalk_sorting(walk.get(), GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE),
          "listing commits");
    check(git_revwalk_push(walk.get(), &head), "listing commits");
    check(git_revwalk_hide(walk.get(), &base), "listing commits");
    git_oid id;
    int status;
    while ((status = git_revwalk_next(&id, walk.get())) == 0) commits.push_back(id);
    if (status != GIT_ITEROVER) check(status, "listing commits");
    return commits;
  }
  // Shallow clones are short: two plain walks and a difference, by commit time.
  const OidSet hidden = ancestry_within(repo, base, roots);
  std::vector<std::pair<git_time_t, git_oid>> dated;
  for (const git_oid& id : ancestry_within(repo, head, roots)) {
    if (hidden.count(id) != 0) continue;
    git_commit* raw = nullptr;
    check(git_commit_lookup(&raw, repo, &id), "listing commits");
    CommitPtr commit(raw);
    dated.emplace_back(git_commit_time(commit.get()), id);
  }
  std::stable_sort(dated.begin(), dated.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [time, id] : dated) commits.push_back(id);
  return commits;
}

std::vector<git_oid> shallow_boundary(git_repository* repo) {
  const OidSet roots = shallow_roots(repo);
  return std::vector<git_oid>(roots.begin(), roots.end());
}

bool at_boundary(const std::vector<git_oid>& boundary, const git_oid& id) {
  return std::any_of(boundary.begin(), boundary.end(),
                     [&](const git_oid& end) { return git_oid_equal(&end, &id) != 0; });
}

namespace {

// walk_history's order in a shallow clone, from the commits it has.
std::vector<git_oid> walk_within(git_repository* repo, const std::vector<git_oid>& tips,
                                 const git_oid& hidden, const std::vector<git_oid>& boundary) {
  const OidSet roots(boundary.begin(), boundary.end());
  const OidSet excluded = ancestry_within(repo, hidden, roots);
  // Every commit to list, with its time and the number of its children still to
  // come; then Kahn's order: a commit is ready once all its children are out.
  struct Node final {
    git_time_t time = 0;
    std::vector<git_oid> parents;  // those listed too
    std::size_t children = 0;
  };
  std::map<git_oid, Node, OidLess> nodes;
  std::vector<git_oid> todo(tips.begin(), tips.end());
  while (!todo.empty()) {
    const git_oid id = todo.back();
    todo.pop_back();
    if (excluded.count(id) != 0 || nodes.count(id) != 0) continue;
    git_commit* raw = nullptr;
    check(git_commit_lookup(&raw, repo, &id), "walking the branches");
    CommitPtr commit(raw);
    Node& node = nodes[id];
    node.time = git_commit_time(commit.get());
    if (roots.count(id) != 0) continue;
    for (unsigned i = 0; i < git_commit_parentcount(commit.get()); ++i) {
      const git_oid parent = *git_commit_parent_id(commit.get(), i);
      if (excluded.count(parent) != 0) continue;
      node.parents.push_back(parent);
      todo.push_back(parent);
    }
  }
  for (const auto& entry : nodes)
    for (const git_oid& parent : entry.second.parents) ++nodes.at(parent).children;
  const auto older = [&](const git_oid& a, const git_oid& b) {
    const git_time_t ta = nodes.at(a).time, tb = nodes.at(b).time;
    return ta != tb ? ta < tb : git_oid_cmp(&a, &b) > 0;
  };
  std::priority_queue<git_oid, std::vector<git_oid>, decltype(older)> ready(older);
  for (const auto& [id, node] : nodes)
    if (node.children == 0) ready.push(id);
  std::vector<git_oid> order;
  order.reserve(nodes.size());
  while (!ready.empty()) {
    const git_oid id = ready.top();
    ready.pop();
    order.push_back(id);
    for (const git_oid& parent : nodes.at(id).parents)
      if (--nodes.at(parent).children == 0) ready.push(parent);
  }
  return order;
}

}  // namespace

std::vector<git_oid> walk_history(git_repository* repo, const std::vector<git_oid>& tips,
                                  const git_oid& hidden, const std::vector<git_oid>& boundary) {
  if (!boundary.empty()) return walk_within(repo, tips, hidden, boundary);
  git_revwalk* raw = nullptr;
  check(git_revwalk_new(&raw, repo), "walking the history");
  RevwalkPtr revwalk(raw);
  check(git_revwalk_sorting(revwalk.get(), GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME),
        "walking the history");
  for (const git_oid& tip : tips)
    check(git_revwalk_push(revwalk.get(), &tip), "walking the history");
  check(git_revwalk_hide(revwalk.get(), &hidden), "walking the history");
  std::vector<git_oid> walked;
  git_oid id;
  int status;
  while ((status = git_revwalk_next(&id, revwalk.get())) == 0) walked.push_back(id);
  if (status != GIT_ITEROVER) check(status, "walking the history");
  return walked;
}

std::string shallow_hint(git_repository* repo) {
  if (git_repository_is_shallow(repo) != 1) return "";
  return " (this is a shallow clone: the history may be cut at its shallow boundary; "
         "deepen it with git fetch --deepen=N or --unshallow)";
}

}  // namespace portdiff
