#pragma once

#include <git2.h>

#include <string>
#include <vector>

namespace portdiff {

/*
 * Ancestry questions a range raises, answered the way git would in a shallow
 * clone too. libgit2 (1.5) walks past a shallow boundary into commits the clone
 * does not have and fails with "object not found"; here the commits listed in
 * .git/shallow are roots, and an answer that needs history beyond them is
 * `unknown` instead of a wrong yes or no.
 */
enum class Descent { yes, no, unknown };

/// Whether `head` descends from `base` (a commit is not its own descendant).
Descent descends_from(git_repository* repo, const git_oid& head, const git_oid& base);

/// The commits reachable from `head` and not from `base`, oldest first (as `git log
/// --reverse base..head`); in a shallow clone the walks stop at the boundary.
std::vector<git_oid> commits_between(git_repository* repo, const git_oid& base,
                                     const git_oid& head);

/// True when `id` is a commit this repository has (false past a shallow boundary).
bool has_commit(git_repository* repo, const git_oid& id);

/// The commits listed in .git/shallow, where a shallow clone's history ends (their
/// parents are not here); empty in a complete clone.
std::vector<git_oid> shallow_boundary(git_repository* repo);

/// True when `id` is one of `boundary`'s commits (shallow_boundary).
bool at_boundary(const std::vector<git_oid>& boundary, const git_oid& id);

/// The commits reachable from `tips` and not from `hidden`, children before parents
/// and newest first among the ready ones (`git rev-list --topo-order`). In a shallow
/// clone (`boundary` not empty), where libgit2's revwalk fails at the boundary, the
/// walk does not go past a commit of `boundary`: such a commit is listed, its parents
/// are not looked up, and `hidden` must be a commit this clone has.
std::vector<git_oid> walk_history(git_repository* repo, const std::vector<git_oid>& tips,
                                  const git_oid& hidden, const std::vector<git_oid>& boundary);

/// The hint appended to errors in a shallow clone; empty in a complete one.
std::string shallow_hint(git_repository* repo);

}  // namespace portdiff
