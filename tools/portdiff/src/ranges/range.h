#pragma once

#include <git2.h>

#include <string>
#include <vector>

namespace portdiff {

/*
 * Stage 1 — resolve a range. A ResolvedRange pins what the user wrote to two full
 * commit ids, so the report stays valid after the branches move on.
 *   `BASE..HEAD`   base and head as given
 *   `BASE...HEAD`  base is the merge base of the two (as `git diff A...B`)
 *   `C`            C's first parent .. C
 * An unknown revision, a root commit given alone, an empty range (head equal to
 * base, or an ancestor of it) and a head that does not descend from its base (P5:
 * the tree diff would show the base's own commits reversed) are Errors naming the
 * side, the spec and both commits. In a shallow clone, ranges inside the kept
 * history work and the others say "shallow" (ancestry.h).
 */
/// One commit of a range, for the report header (P21).
struct RangeCommit final {
  git_oid id{};
  std::string subject;
};

struct ResolvedRange final {
  std::string spec;  // as the user wrote it
  // How reports name it: --label, else a branch — the head as written when it
  // names one, or the one local branch whose tip is the head — else the spec.
  std::string label;
  bool named = false;  // the label is a name (a branch or --label), not the spec
  git_oid base{};
  git_oid head{};
  std::vector<RangeCommit> commits;  // base..head, oldest first (list_commits)
  // find --report --hints: the head is only a same-subject hint, not a port with
  // evidence; the label then ends in " (hint)".
  bool hint = false;
};

ResolvedRange resolve_range(git_repository* repo, const std::string& spec, const std::string& side);

/// Fills `range.commits`: the commits reachable from head and not from base, as
/// `git log --reverse base..head` lists them.
void list_commits(git_repository* repo, ResolvedRange& range);

}  // namespace portdiff
