#include "find/branches.h"

#include "git_handle.h"

#include <algorithm>
#include <string_view>
#include <fnmatch.h>

namespace portdiff {
namespace {

/// Whether `ref` (a branch) is what HEAD names: the local HEAD, or for a
/// remote-tracking branch `refs/remotes/<remote>/HEAD`.
bool is_trunk(git_repository* repo, git_reference* ref, git_branch_t type, const char* name) {
  if (type == GIT_BRANCH_LOCAL) return git_branch_is_head(ref) == 1;
  const std::string short_name = name;
  const std::size_t slash = short_name.find('/');
  if (slash == std::string::npos) return false;
  git_reference* head_raw = nullptr;
  const std::string head = "refs/remotes/" + short_name.substr(0, slash) + "/HEAD";
  if (git_reference_lookup(&head_raw, repo, head.c_str()) != 0) return false;
  ReferencePtr head_ref(head_raw);
  const char* target = git_reference_symbolic_target(head_ref.get());
  return target != nullptr && std::string(target) == git_reference_name(ref);
}

}  // namespace

std::vector<Branch> matching_branches(git_repository* repo, const std::vector<std::string>& globs) {
  git_branch_iterator* raw = nullptr;
  check(git_branch_iterator_new(&raw, repo, GIT_BRANCH_ALL), "listing branches");
  BranchIteratorPtr branches(raw);
  std::vector<Branch> found;
  git_reference* ref_raw = nullptr;
  git_branch_t type;
  int status;
  while ((status = git_branch_next(&ref_raw, &type, branches.get())) == 0) {
    ReferencePtr ref(ref_raw);
    if (git_reference_type(ref.get()) != GIT_REFERENCE_DIRECT) continue;
    const char* name = nullptr;
    check(git_branch_name(&name, ref.get()), "reading a branch name");
    for (const std::string& glob : globs)
      if (fnmatch(glob.c_str(), name, 0) == 0) {
        Branch& branch = found.emplace_back();
        branch.name = name;
        branch.tip = *git_reference_target(ref.get());
        branch.trunk = is_trunk(repo, ref.get(), type, name);
        git_reference* upstream_raw = nullptr;
        if (type == GIT_BRANCH_LOCAL && git_branch_upstream(&upstream_raw, ref.get()) == 0) {
          ReferencePtr upstream(upstream_raw);
          const char* upstream_name = nullptr;
          if (git_branch_name(&upstream_name, upstream.get()) == 0) branch.upstream = upstream_name;
        }
        break;
      }
  }
  if (status != GIT_ITEROVER) check(status, "listing branches");
  // A local branch and the remote-tracking branch it tracks, at the same commit,
  // are one branch: one row, the remote named beside it (P31).
  for (Branch& local : found) {
    if (local.upstream.empty()) continue;
    const auto twin = std::find_if(found.begin(), found.end(), [&](const Branch& other) {
      return other.name == local.upstream && git_oid_equal(&other.tip, &local.tip);
    });
    if (twin == found.end()) continue;
    local.twins.push_back(twin->name);
    local.trunk = local.trunk || twin->trunk;
    twin->name.clear();  // dropped below
  }
  found.erase(std::remove_if(found.begin(), found.end(),
                             [](const Branch& branch) { return branch.name.empty(); }),
              found.end());
  std::sort(found.begin(), found.end(),
            [](const Branch& a, const Branch& b) { return version_less(a.name, b.name); });
  return found;
}

bool version_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      std::size_t i_end = i, j_end = j;
      while (i_end < a.size() && digit(a[i_end])) ++i_end;
      while (j_end < b.size() && digit(b[j_end])) ++j_end;
      // Compare as numbers: without leading zeros, a longer run is larger.
      std::size_t i_start = i, j_start = j;
      while (i_start + 1 < i_end && a[i_start] == '0') ++i_start;
      while (j_start + 1 < j_end && b[j_start] == '0') ++j_start;
      const std::string_view x(a.data() + i_start, i_end - i_start);
      const std::string_view y(b.data() + j_start, j_end - j_start);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i_end;
      j = j_end;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i;
    ++j;
  }
  if ((a.size() - i) != (b.size() - j)) return a.size() - i < b.size() - j;
  return a < b;
}

}  // namespace portdiff
