#pragma once

#include "diff/file_change.h"
#include "find/changed_line_sum.h"
#include "git_handle.h"
#include "match/marks.h"
#include "options.h"

#include <git2.h>

#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace portdiff {

/*
 * The port matcher, the one rule `portdiff find` and `portdiff audit` both apply:
 * is `candidate` a port of `wanted`? The rules, in the order they decide:
 *   1. marks (Note [Port marks]): a mark of either commit names the other, both
 *      name the same commit, or both carry the same Change-Id;
 *   2. the patch: the stable patch-id (`git patch-id --stable`; two empty commits
 *      are equivalent, as git cherry has it), or the report's own rule on the
 *      changed lines (every file identical, no context: a port onto a drifted
 *      baseline);
 *   3. the subject (without port markers), a hint only — never a commit whose mark
 *      proves it the port of another commit.
 * Every rule that holds is recorded; the rule that decides is the first, and of
 * several ports the best rule wins, then the newest (choose_port).
 */
struct Port final {
  git_oid commit{};
  unsigned marks = 0;  // the MarkKind bits that tie the pair
  bool by_patch_id = false;
  bool by_changed_lines = false;
  bool by_subject = false;
  std::vector<CommitMark> unresolved;  // the port's marks naming no commit in the repository
  /// Anything but the subject: the commit is a port, not just a likely one.
  bool evidence() const { return marks != 0 || by_patch_id || by_changed_lines; }
  /// The rule that decides: 0 a mark, 1 the patch, 2 the subject (a hint).
  int rank() const { return marks != 0 ? 0 : evidence() ? 1 : 2; }
};

/// A mark naming a commit, looked up in the repository.
struct ResolvedMark final {
  CommitMark mark;
  bool present = false;  // false: no such commit here (a pre-rebase SHA), or ambiguous
  git_oid id{};
};

/*
 * PortCommit: what the rules read of one commit, each part read once and only
 * when a rule needs it — its message and marks at once; its `git show` paths, its
 * stable patch-id and changed-line sum, and the report's reading of its patch
 * later, since most pairs are ruled out before. Holds no libgit2 handle.
 */
class PortCommit final {
 public:
  PortCommit(git_repository* repo, const git_oid& id);

  const git_oid& id() const { return id_; }
  const std::string& hex() const { return hex_; }
  const std::string& subject() const { return subject_; }
  /// The subject without port markers: leading "[tag] ", a trailing " (#123)".
  const std::string& bare_subject() const { return bare_subject_; }
  const std::vector<ResolvedMark>& marks() const { return marks_; }
  const std::string& change_id() const { return change_id_; }
  /// The marks naming no commit in the repository: they fell through (Note [Port marks]).
  std::vector<CommitMark> unresolved() const;
  /// Whether a present mark names a commit other than `other` (proof that this
  /// commit is that commit's port, so never a hint of `other`).
  bool names_other_than(const git_oid& other) const;

  /// The paths `git show` names, old and new.
  const std::set<std::string>& paths(git_repository* repo);
  /// Whether the commit could name exactly `paths`: tree lookups only, which rule
  /// out almost every commit of a history before any diff (true once paths are read).
  bool may_have_paths(git_repository* repo, const std::set<std::string>& paths);
  /// The stable patch-id; false for an empty commit (git patch-id prints none).
  bool patch_id(git_repository* repo, git_oid& id);
  const ChangedLineSum& line_sum(git_repository* repo);
  /// The report's reading of the commit's patch (against its first parent).
  const SidePatch& lines(git_repository* repo, const Options& options);

 private:
  void read_paths(git_repository* repo);
  void read_patch_id(git_repository* repo);
  git_oid id_{};
  std::string hex_, subject_, bare_subject_, change_id_;
  std::vector<ResolvedMark> marks_;
  bool has_paths_ = false;
  std::set<std::string> paths_;
  bool patch_id_read_ = false, has_patch_id_ = false;
  git_oid patch_id_{};
  ChangedLineSum line_sum_;
  std::optional<SidePatch> lines_;
};

/// Every rule for `candidate` as a port of `wanted` (a Port with nothing set: none).
Port match_port(git_repository* repo, PortCommit& wanted, PortCommit& candidate,
                const Options& options);

/// The port to compare among `ports` (newest first): the best rule, then the
/// newest; a hint (no evidence) only with `hints`. Null when there is none.
const Port* choose_port(const std::vector<Port>& ports, bool hints);

/// The subject without what ports add to it (PortCommit::bare_subject).
std::string bare_subject(std::string subject);

/*
 * PortIndex: the commits of one side (a target's), indexed by what the rules key
 * on, so that a commit of the other side is matched against the few that could be
 * its port — those its marks name or that name it, with its Change-Id, its paths
 * or its subject — and not against all (as git cherry hashes by file names first).
 * Does not own the commits.
 */
class PortIndex final {
 public:
  PortIndex(git_repository* repo, std::vector<PortCommit>& commits);
  /// The indices of the commits that may be ports of `wanted`, ascending.
  std::vector<std::size_t> candidates(git_repository* repo, PortCommit& wanted) const;

 private:
  using Ids = std::unordered_map<std::string, std::vector<std::size_t>>;
  Ids by_id_;       // a commit's own hex
  Ids by_named_;    // the hex of each present commit its marks name
  Ids by_change_;   // Change-Id
  Ids by_paths_;    // its paths, joined
  Ids by_subject_;  // bare subject
};

}  // namespace portdiff
