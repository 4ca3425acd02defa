#pragma once

#include <git2.h>

#include <string>

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
struct ResolvedRange final {
  std::string spec;   // as the user wrote it
  std::string label;  // how reports name it: the spec, or a branch name (find --report)
  git_oid base;
  git_oid head;
};

ResolvedRange resolve_range(git_repository* repo, const std::string& spec,
                            const std::string& side);

}  // namespace portdiff
