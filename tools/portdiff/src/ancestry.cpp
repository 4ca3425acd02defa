#include "ancestry.h"

#include <fstream>
#include <set>
#include <vector>

#include "git_handle.h"

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

std::string shallow_hint(git_repository* repo) {
  if (git_repository_is_shallow(repo) != 1) return "";
  return " (this is a shallow clone: the history may be cut at its shallow boundary; "
         "deepen it with git fetch --deepen=N or --unshallow)";
}

}  // namespace portdiff
