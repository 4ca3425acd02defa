#pragma once

#include <git2.h>

#include <string>
#include <vector>

namespace portdiff {

/*
 * The branches `find` searches: the local and remote-tracking branches whose short
 * name matches a --branches glob, in version order. Each knows whether it is the
 * trunk (what HEAD names), which decides where a port that several branches hold
 * was made; a local branch at the same commit as the remote-tracking branch it
 * tracks is one branch, the remote named as its twin (P31).
 */
struct Branch final {
  std::string name;
  git_oid tip{};
  bool trunk = false;    // what HEAD (local) or <remote>/HEAD names: the line others fork from
  std::string upstream;  // a local branch's upstream, short name; empty if none
  std::vector<std::string> twins;  // remote-tracking branches folded into this one (P31)
};

/// Local and remote-tracking branches whose short name matches a glob, in version
/// order. Symbolic ones (origin/HEAD) are skipped: they name another branch.
std::vector<Branch> matching_branches(git_repository* repo, const std::vector<std::string>& globs);

/// Whether `a` sorts before `b` in version order: runs of digits compare as
/// numbers, so "v2.9.0" comes before "v2.10.0" (as `sort -V` has it).
bool version_less(const std::string& a, const std::string& b);

}  // namespace portdiff
