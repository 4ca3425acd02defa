#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace portdiff {

/*
 * Note [Port marks]
 * The marks that projects write into a port's message to say where it came from,
 * read by the port matcher (matcher.h) before any patch is compared:
 *   - `(cherry picked from commit X)`: `git cherry-pick -x`;
 *   - `commit X upstream.` on a line of its own: Linux stable's backports;
 *   - `[ Upstream commit X ]`: the other form Linux stable uses;
 *   - `[PR #N/X backport]`: patchback's backports (X abbreviated to 8 digits);
 *   - `Change-Id: I...`: Gerrit's id, the same on every rebase and pick of a change.
 * The first four name a commit, in full or abbreviated (7 hex digits or more); a
 * port matches when either commit's mark names the other (both directions: a
 * release commit's trailer names its main commit whichever side is audited), or
 * both name the same commit (two backports of one upstream commit). A Change-Id
 * ties commits that carry the same one. A mark naming a commit that is not in the
 * repository (a pre-rebase SHA) proves nothing: matching falls through to the
 * patch rules, and the mark is reported as unresolved.
 */
enum class MarkKind : unsigned {
  cherry_pick = 1U << 0,
  upstream_line = 1U << 1,
  upstream_bracket = 1U << 2,
  patchback = 1U << 3,
  change_id = 1U << 4,
};

/// A mark that names a commit, as written (lowercase hex, 7 to 40 digits).
struct CommitMark final {
  MarkKind kind = MarkKind::cherry_pick;
  std::string hex;
};

struct Marks final {
  std::vector<CommitMark> commits;  // by kind, each kind in message order
  std::string change_id;            // the last `Change-Id:` trailer's value; empty if none
};

/// Every mark of `message` (Note [Port marks]).
Marks read_marks(std::string_view message);

/// The mark's name: in words (`cherry-pick trailer`) or for JSON (`cherry-pick-trailer`).
const char* mark_name(MarkKind kind, bool json_name);

/// Every kind, in the order the marks are listed.
inline constexpr MarkKind kAllMarks[] = {MarkKind::cherry_pick, MarkKind::upstream_line,
                                         MarkKind::upstream_bracket, MarkKind::patchback,
                                         MarkKind::change_id};

}  // namespace portdiff
