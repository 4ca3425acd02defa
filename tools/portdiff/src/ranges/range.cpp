#include "ranges/range.h"

#include "error.h"
#include "git_handle.h"
#include "ranges/ancestry.h"

namespace portdiff {
namespace {

git_oid peel_to_commit(git_object* object, const std::string& what) {
  git_object* raw = nullptr;
  check(git_object_peel(&raw, object, GIT_OBJECT_COMMIT), what + " is not a commit");
  ObjectPtr commit(raw);
  return *git_object_id(commit.get());
}

std::string short_id(const git_oid& id) { return to_hex(id).substr(0, 12); }

/// "'main' (0123456789ab)": what the user wrote for one end, and the commit it is.
std::string named(const std::string& written, const git_oid& id) {
  return "'" + written + "' (" + short_id(id) + ")";
}

/// The branch that names `head`: `written` itself when it is a branch (local or
/// remote-tracking), else the only local branch whose tip is `head`; "" if none.
std::string branch_name(git_repository* repo, const std::string& written, const git_oid& head) {
  for (git_branch_t type : {GIT_BRANCH_LOCAL, GIT_BRANCH_REMOTE}) {
    git_reference* raw = nullptr;
    const int found = git_branch_lookup(&raw, repo, written.c_str(), type);
    ReferencePtr ref(found == 0 ? raw : nullptr);
    if (ref) return written;
  }
  git_branch_iterator* iterator_raw = nullptr;
  check(git_branch_iterator_new(&iterator_raw, repo, GIT_BRANCH_LOCAL), "listing branches");
  BranchIteratorPtr branches(iterator_raw);
  std::string found;
  std::size_t tips = 0;
  git_reference* ref_raw = nullptr;
  git_branch_t type;
  while (git_branch_next(&ref_raw, &type, branches.get()) == 0) {
    ReferencePtr ref(ref_raw);
    const git_oid* target = git_reference_target(ref.get());
    if (target == nullptr || !git_oid_equal(target, &head)) continue;
    const char* name = nullptr;
    check(git_branch_name(&name, ref.get()), "reading a branch name");
    found = name;
    ++tips;
  }
  return tips == 1 ? found : "";
}

/// Names the range after its branch when there is one (see ResolvedRange::label).
void name_range(git_repository* repo, ResolvedRange& range, const std::string& head_written) {
  const std::string branch = branch_name(repo, head_written, range.head);
  if (branch.empty()) return;
  range.label = branch;
  range.named = true;
}

}  // namespace

void list_commits(git_repository* repo, ResolvedRange& range) {
  for (const git_oid& id : commits_between(repo, range.base, range.head)) {
    git_commit* raw = nullptr;
    check(git_commit_lookup(&raw, repo, &id), "looking up a commit of " + range.spec);
    CommitPtr commit(raw);
    const char* summary = git_commit_summary(commit.get());
    range.commits.push_back({id, summary == nullptr ? "" : summary});
  }
}

ResolvedRange resolve_range(git_repository* repo, const std::string& spec,
                            const std::string& side) {
  const std::string where = side + " '" + spec + "'";
  const std::string hint = shallow_hint(repo);
  ResolvedRange range{spec, spec, false, {}, {}, {}, false};
  std::string base_written, head_written;

  const std::size_t dots = spec.find("..");
  if (dots != std::string::npos) {
    git_revspec revspec{};
    check(git_revparse(&revspec, repo, spec.c_str()), "unknown revision in " + where + hint);
    ObjectPtr from(revspec.from);
    ObjectPtr to(revspec.to);
    if (!(revspec.flags & GIT_REVSPEC_RANGE) || !from || !to) throw Error("not a range: " + where);
    range.base = peel_to_commit(from.get(), where);
    range.head = peel_to_commit(to.get(), where);
    const bool three_dots = (revspec.flags & GIT_REVSPEC_MERGE_BASE) != 0;
    base_written = spec.substr(0, dots);
    head_written = spec.substr(dots + (three_dots ? 3 : 2));
    if (three_dots) {
      const git_oid tips[2] = {range.base, range.head};
      const int found = git_merge_base(&range.base, repo, &tips[0], &tips[1]);
      if (found == GIT_ENOTFOUND)
        throw Error("no merge base in " + where + ": " + named(base_written, tips[0]) + " and " +
                    named(head_written, tips[1]) + " have unrelated histories" + hint);
      check(found, "finding the merge base in " + where + hint);
      base_written = "merge base";
    }
  } else {
    git_object* raw = nullptr;
    check(git_revparse_single(&raw, repo, spec.c_str()), "unknown revision in " + where + hint);
    ObjectPtr object(raw);
    range.head = peel_to_commit(object.get(), where);
    git_commit* commit_raw = nullptr;
    check(git_commit_lookup(&commit_raw, repo, &range.head), "looking up " + where);
    CommitPtr commit(commit_raw);
    if (git_commit_parentcount(commit.get()) == 0)
      throw Error("root commit has no parent, give BASE..HEAD: " + where);
    range.base = *git_commit_parent_id(commit.get(), 0);
    base_written = spec + "^";
    head_written = spec;
  }

  if (git_oid_equal(&range.base, &range.head))
    throw Error("empty range (base and head are the same commit): " + where);
  if (!has_commit(repo, range.base))
    throw Error("base " + named(base_written, range.base) + " of " + where +
                " is not in this repository" +
                (hint.empty() ? "" : ": it lies past the shallow boundary" + hint));
  switch (descends_from(repo, range.head, range.base)) {
    case Descent::yes:
      name_range(repo, range, head_written);
      return range;
    case Descent::unknown:
      throw Error("cannot tell whether head " + named(head_written, range.head) +
                  " descends from base " + named(base_written, range.base) + " in " + where +
                  ": the history is cut at the shallow boundary before either answer" + hint);
    case Descent::no:
      break;
  }
  if (descends_from(repo, range.base, range.head) == Descent::yes)
    throw Error("empty range (head is an ancestor of base): " + where);
  // Diffing the two trees would show the base's own commits reversed, as extra
  // rows nobody ported; git's BASE...HEAD reading is one flag away, so ask for it.
  throw Error("head " + named(head_written, range.head) + " does not descend from base " +
              named(base_written, range.base) + " in " + where +
              "; give BASE...HEAD to compare from their merge base, as git diff A...B does");
}

}  // namespace portdiff
