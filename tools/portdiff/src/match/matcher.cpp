#include "match/matcher.h"

#include "classify/classify.h"
#include "classify/realign.h"
#include "diff/collect.h"
#include "diff/side_diff.h"
#include "find/patch_id.h"
#include "ranges/range.h"

#include <algorithm>

namespace portdiff {
namespace {

std::vector<ResolvedMark> resolve(git_repository* repo, const Marks& marks) {
  std::vector<ResolvedMark> out;
  for (const CommitMark& mark : marks.commits) {
    ResolvedMark& resolved = out.emplace_back();
    resolved.mark = mark;
    git_oid prefix;
    git_object* raw = nullptr;
    if (git_oid_fromstrn(&prefix, mark.hex.c_str(), mark.hex.size()) == 0 &&
        git_object_lookup_prefix(&raw, repo, &prefix, mark.hex.size(), GIT_OBJECT_COMMIT) == 0) {
      ObjectPtr object(raw);
      resolved.present = true;
      resolved.id = *git_object_id(object.get());
    }
  }
  return out;
}

bool names(const std::vector<ResolvedMark>& marks, const git_oid& id, unsigned& kinds) {
  bool any = false;
  for (const ResolvedMark& mark : marks)
    if (mark.present && git_oid_equal(&mark.id, &id) != 0) {
      kinds |= static_cast<unsigned>(mark.mark.kind);
      any = true;
    }
  return any;
}

/// The mark bits that tie the two commits (Note [Port marks]).
unsigned marks_tying(const PortCommit& wanted, const PortCommit& candidate) {
  unsigned kinds = 0;
  names(candidate.marks(), wanted.id(), kinds);
  names(wanted.marks(), candidate.id(), kinds);
  for (const ResolvedMark& mark : wanted.marks())  // both backports of one commit
    if (mark.present && names(candidate.marks(), mark.id, kinds))
      kinds |= static_cast<unsigned>(mark.mark.kind);
  if (!wanted.change_id().empty() && wanted.change_id() == candidate.change_id())
    kinds |= static_cast<unsigned>(MarkKind::change_id);
  return kinds;
}

/// The report's own rule on two patches: every file of the union identical.
bool same_changed_lines(git_repository* repo, const SidePatch& a, const SidePatch& b) {
  std::vector<FileVerdict> rows = classify(a, b);
  realign(repo, rows);
  for (const FileVerdict& row : rows)
    if (row.verdict != Verdict::identical) return false;
  return !rows.empty();
}

/// Every path under `tree` (a side that is absent on the other).
void all_paths(git_repository* repo, const git_tree* tree, const std::string& prefix,
               std::set<std::string>& out) {
  for (std::size_t i = 0; i < git_tree_entrycount(tree); ++i) {
    const git_tree_entry* entry = git_tree_entry_byindex(tree, i);
    const std::string path = prefix + git_tree_entry_name(entry);
    if (git_tree_entry_type(entry) != GIT_OBJECT_TREE) {
      out.insert(path);
      continue;
    }
    git_tree* sub_raw = nullptr;
    check(git_tree_lookup(&sub_raw, repo, git_tree_entry_id(entry)), "reading a tree");
    TreePtr sub(sub_raw);
    all_paths(repo, sub.get(), path + "/", out);
  }
}

/// The paths whose entry differs between two trees (`git diff --name-only`, which
/// for a rename names both paths, as `git show`'s diff with renames found does):
/// descends only into subtrees whose ids differ. A plain tree walk, because this
/// runs for every commit of an audit and libgit2's diff machinery costs several
/// times more for the same answer.
void changed_paths(git_repository* repo, const git_tree* old_tree, const git_tree* new_tree,
                   const std::string& prefix, std::set<std::string>& out) {
  const auto subtree = [&](const git_tree_entry* entry) {
    git_tree* raw = nullptr;
    check(git_tree_lookup(&raw, repo, git_tree_entry_id(entry)), "reading a tree");
    return TreePtr(raw);
  };
  const auto one_side = [&](const git_tree_entry* entry, const std::string& path) {
    if (git_tree_entry_type(entry) == GIT_OBJECT_TREE)
      all_paths(repo, subtree(entry).get(), path + "/", out);
    else
      out.insert(path);
  };
  for (std::size_t i = 0; i < git_tree_entrycount(old_tree); ++i) {
    const git_tree_entry* before = git_tree_entry_byindex(old_tree, i);
    const std::string path = prefix + git_tree_entry_name(before);
    const git_tree_entry* after = git_tree_entry_byname(new_tree, git_tree_entry_name(before));
    if (after == nullptr) {
      one_side(before, path);
      continue;
    }
    if (git_oid_equal(git_tree_entry_id(before), git_tree_entry_id(after)) != 0 &&
        git_tree_entry_filemode(before) == git_tree_entry_filemode(after))
      continue;
    const bool old_is_tree = git_tree_entry_type(before) == GIT_OBJECT_TREE;
    const bool new_is_tree = git_tree_entry_type(after) == GIT_OBJECT_TREE;
    if (old_is_tree && new_is_tree) {
      changed_paths(repo, subtree(before).get(), subtree(after).get(), path + "/", out);
    } else {
      one_side(before, path);  // a blob changed, or a tree became a blob or back
      one_side(after, path);
    }
  }
  for (std::size_t i = 0; i < git_tree_entrycount(new_tree); ++i) {
    const git_tree_entry* after = git_tree_entry_byindex(new_tree, i);
    if (git_tree_entry_byname(old_tree, git_tree_entry_name(after)) == nullptr)
      one_side(after, prefix + git_tree_entry_name(after));
  }
}

std::string joined(const std::set<std::string>& paths) {
  std::string key;
  for (const std::string& path : paths) key.append(path).push_back('\0');
  return key;
}

}  // namespace

std::string bare_subject(std::string subject) {
  while (subject.size() > 1 && subject[0] == '[') {
    const std::size_t close = subject.find("] ");
    if (close == std::string::npos) break;
    subject.erase(0, close + 2);
  }
  const std::size_t open = subject.rfind(" (#");
  if (open != std::string::npos && subject.back() == ')') subject.erase(open);
  return subject;
}

PortCommit::PortCommit(git_repository* repo, const git_oid& id) : id_(id), hex_(to_hex(id)) {
  CommitPtr commit = lookup_commit(repo, id);
  const char* message = git_commit_message(commit.get());
  const Marks marks = read_marks(message == nullptr ? "" : message);
  marks_ = resolve(repo, marks);
  change_id_ = marks.change_id;
  const char* summary = git_commit_summary(commit.get());
  subject_ = summary == nullptr ? "" : summary;
  bare_subject_ = portdiff::bare_subject(subject_);
}

bool PortCommit::names_other_than(const git_oid& other) const {
  return std::any_of(marks_.begin(), marks_.end(), [&](const ResolvedMark& mark) {
    return mark.present && git_oid_equal(&mark.id, &other) == 0;
  });
}

std::vector<CommitMark> PortCommit::unresolved() const {
  std::vector<CommitMark> out;
  for (const ResolvedMark& mark : marks_)
    if (!mark.present) out.push_back(mark.mark);
  return out;
}

void PortCommit::read_paths(git_repository* repo) {
  if (has_paths_) return;
  CommitPtr commit = lookup_commit(repo, id_);
  git_tree* new_raw = nullptr;
  check(git_commit_tree(&new_raw, commit.get()), "reading a tree");
  TreePtr new_tree(new_raw);
  TreePtr old_tree = commit_tree(repo, *git_commit_parent_id(commit.get(), 0));
  changed_paths(repo, old_tree.get(), new_tree.get(), "", paths_);
  has_paths_ = true;
}

const std::set<std::string>& PortCommit::paths(git_repository* repo) {
  read_paths(repo);
  return paths_;
}

bool PortCommit::may_have_paths(git_repository* repo, const std::set<std::string>& paths) {
  if (has_paths_) return paths_ == paths;
  CommitPtr commit = lookup_commit(repo, id_);
  const git_oid* parent = git_commit_parent_id(commit.get(), 0);
  if (paths.empty())  // an empty commit: its tree is its parent's
    return git_oid_equal(git_commit_tree_id(commit.get()),
                         git_commit_tree_id(lookup_commit(repo, *parent).get())) != 0;
  // Each path must change (blob, mode or presence): a rename's two paths do too.
  git_tree* tree_raw = nullptr;
  check(git_commit_tree(&tree_raw, commit.get()), "reading a tree");
  TreePtr tree(tree_raw);
  TreePtr parent_tree = commit_tree(repo, *parent);
  for (const std::string& path : paths) {
    git_tree_entry *before_raw = nullptr, *after_raw = nullptr;
    const int before_found = git_tree_entry_bypath(&before_raw, parent_tree.get(), path.c_str());
    const int after_found = git_tree_entry_bypath(&after_raw, tree.get(), path.c_str());
    TreeEntryPtr before(before_found == 0 ? before_raw : nullptr);
    TreeEntryPtr after(after_found == 0 ? after_raw : nullptr);
    if (!before && !after) return false;
    if (before && after &&
        git_tree_entry_filemode(before.get()) == git_tree_entry_filemode(after.get()) &&
        git_oid_equal(git_tree_entry_id(before.get()), git_tree_entry_id(after.get())))
      return false;
  }
  return true;
}

void PortCommit::read_patch_id(git_repository* repo) {
  if (patch_id_read_) return;
  CommitPtr commit = lookup_commit(repo, id_);
  read_paths(repo);
  const DiffPtr show = show_diff(repo, commit.get(), paths_.empty() ? nullptr : &paths_);
  has_patch_id_ = stable_patch_id(repo, show.get(), patch_id_, &line_sum_);
  patch_id_read_ = true;
}

bool PortCommit::patch_id(git_repository* repo, git_oid& id) {
  read_patch_id(repo);
  id = patch_id_;
  return has_patch_id_;
}

const ChangedLineSum& PortCommit::line_sum(git_repository* repo) {
  read_patch_id(repo);
  return line_sum_;
}

const SidePatch& PortCommit::lines(git_repository* repo, const Options& options) {
  if (!lines_) {
    CommitPtr commit = lookup_commit(repo, id_);
    ResolvedRange range;
    range.base = *git_commit_parent_id(commit.get(), 0);
    range.head = id_;
    read_paths(repo);
    lines_ = collect_lines(
        repo, diff_range(repo, range, options, paths_.empty() ? nullptr : &paths_).get());
  }
  return *lines_;
}

Port match_port(git_repository* repo, PortCommit& wanted, PortCommit& candidate,
                const Options& options) {
  Port port;
  port.commit = candidate.id();
  port.marks = marks_tying(wanted, candidate);
  port.unresolved = candidate.unresolved();
  port.by_subject =
      !wanted.bare_subject().empty() && candidate.bare_subject() == wanted.bare_subject();
  const std::set<std::string>& paths = wanted.paths(repo);
  if (candidate.may_have_paths(repo, paths) && candidate.paths(repo) == paths) {
    if (paths.empty()) {
      port.by_patch_id = true;  // two empty commits: git cherry's patch-ids are equal
    } else {
      git_oid wanted_id, candidate_id;
      const bool wanted_has = wanted.patch_id(repo, wanted_id);
      port.by_patch_id = wanted_has && candidate.patch_id(repo, candidate_id) &&
                         git_oid_equal(&wanted_id, &candidate_id) != 0;
      // The -U0 readings only where the sums leave it open (Note [Changed-line sum]).
      port.by_changed_lines =
          wanted.line_sum(repo).may_match(candidate.line_sum(repo)) &&
          same_changed_lines(repo, wanted.lines(repo, options), candidate.lines(repo, options));
    }
  }
  // A commit whose mark proves it another commit's port is no hint (case P37).
  if (!port.evidence() && candidate.names_other_than(wanted.id())) port.by_subject = false;
  return port;
}

const Port* choose_port(const std::vector<Port>& ports, bool hints) {
  const Port* best = nullptr;
  for (const Port& port : ports)  // newest first: a later one must rank better
    if ((port.evidence() || hints) && (best == nullptr || port.rank() < best->rank())) best = &port;
  return best;
}

PortIndex::PortIndex(git_repository* repo, std::vector<PortCommit>& commits) {
  for (std::size_t i = 0; i < commits.size(); ++i) {
    PortCommit& commit = commits[i];
    by_id_[commit.hex()].push_back(i);
    for (const ResolvedMark& mark : commit.marks())
      if (mark.present) by_named_[to_hex(mark.id)].push_back(i);
    if (!commit.change_id().empty()) by_change_[commit.change_id()].push_back(i);
    by_paths_[joined(commit.paths(repo))].push_back(i);
    if (!commit.bare_subject().empty()) by_subject_[commit.bare_subject()].push_back(i);
  }
}

std::vector<std::size_t> PortIndex::candidates(git_repository* repo, PortCommit& wanted) const {
  std::vector<std::size_t> out;
  const auto add = [&](const Ids& ids, const std::string& key) {
    const auto found = ids.find(key);
    if (found != ids.end()) out.insert(out.end(), found->second.begin(), found->second.end());
  };
  add(by_named_, wanted.hex());
  for (const ResolvedMark& mark : wanted.marks())
    if (mark.present) {
      add(by_id_, to_hex(mark.id));
      add(by_named_, to_hex(mark.id));
    }
  if (!wanted.change_id().empty()) add(by_change_, wanted.change_id());
  add(by_paths_, joined(wanted.paths(repo)));
  if (!wanted.bare_subject().empty()) add(by_subject_, wanted.bare_subject());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace portdiff
