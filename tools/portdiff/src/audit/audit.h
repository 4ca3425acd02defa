#pragma once

#include "classify/classify.h"
#include "match/matcher.h"
#include "options.h"
#include "ranges/range.h"

#include <git2.h>

#include <string>
#include <vector>

namespace portdiff {

/*
 * `portdiff audit SOURCE_RANGE --onto TARGET...`: a whole-branch audit. Every
 * commit of the source range (merges aside: a port is of a commit, as git cherry
 * has it) is looked up on each target by the port matcher (matcher.h: marks, then
 * the patch, then hints) among the target's commits since it forked — those
 * reachable from the target and not from the range's head, git cherry's set — and
 * its port compared with it by the pair report's rules. A target that already
 * holds the commit contains it. A target commit whose marks name several commits
 * of the range is one squash, compared once with all of them (P38); a hint is
 * never a commit already proven another commit's port (P37). The target's own
 * commits that are no port of any commit of the range are listed as having no
 * source (git cherry -v's `+` lines, with the matcher's wider rules).
 * It runs as named steps (audit.cpp): read the range → read each target → match
 * → find squashes → choose hints → list the unsourced → compare.
 */
enum class AuditStatus {
  identical,   // its port changes every file identically
  different,   // its port differs in some file (the rows are kept)
  not_ported,  // no port, not even a hint
  hint,        // only a same-subject hint, not compared (without --hints)
  contained,   // the target's history holds the commit itself
  squash,      // its port also ports other commits of the range (one squash, P38)
};

/// A file row of a compared port that is not identical.
struct AuditFile final {
  std::string path;
  Verdict verdict = Verdict::different;
  Difference difference = Difference::none;
};

struct AuditCell final {
  AuditStatus status = AuditStatus::not_ported;
  bool has_port = false;  // `port` is set: a port with evidence, or a hint
  Port port;
  bool compared_hint = false;  // --hints compared a same-subject hint
  bool renames_found = false;  // identical once renames are paired, as the patch-id reads it (P39)
  std::vector<AuditFile> differs;  // different, squash: the rows that are not identical
  // squash: every commit of the range the port's marks name, oldest first. The
  // oldest one's row shows the squash; when they are consecutive commits (each the
  // first parent of the next) their range is compared with the port as one patch.
  std::vector<git_oid> squash_of;
  bool squash_compared = false;
};

struct AuditCommit final {
  git_oid id{};
  std::string subject;
  std::vector<CommitMark> unresolved;  // its marks naming no commit here (Note [Port marks])
  std::vector<AuditCell> cells;        // one per target, in --onto order
};

/// A target commit that is no port of any commit of the range.
struct UnsourcedCommit final {
  git_oid id{};
  std::string subject;
  bool has_hint = false;  // its subject is a range commit's (`hint_of`), nothing more
  git_oid hint_of{};
  std::vector<CommitMark> unresolved;  // its marks naming no commit here
};

struct AuditTarget final {
  std::string label;  // as given to --onto
  git_oid head{};
  bool has_fork = false;                   // false: no merge base in this clone
  git_oid fork{};                          // the merge base with the range's head
  std::vector<UnsourcedCommit> unsourced;  // newest first
  // In a shallow clone: the boundary commits the walk of the target's commits
  // reached. Their parents are not here, so the commits before them, and their
  // own patches, were not searched (as find does, case P26).
  std::vector<git_oid> history_ends;
};

struct AuditReport final {
  ResolvedRange source;
  std::size_t merges = 0;  // merges of the range, not audited
  std::vector<AuditTarget> targets;
  std::vector<AuditCommit> commits;  // oldest first
  /// True when a shallow boundary cut some target's history short (exit 3).
  bool cut() const {
    for (const AuditTarget& target : targets)
      if (!target.history_ends.empty()) return true;
    return false;
  }
};

/// Runs the audit: resolves the range and the targets, matches every commit, and
/// compares each port found with build_reports(). Raises Error as those do.
AuditReport build_audit(const Options& options);

/// Whether every cell is identical, contained, or a squash compared identical (the
/// --check condition).
bool audit_clean(const AuditReport& report);

}  // namespace portdiff
