#include "range.h"

#include "error.h"
#include "git_handle.h"

namespace portdiff {
namespace {

git_oid peel_to_commit(git_object* object, const std::string& what) {
  git_object* raw = nullptr;
  check(git_object_peel(&raw, object, GIT_OBJECT_COMMIT), what + " is not a commit");
  ObjectPtr commit(raw);
  return *git_object_id(commit.get());
}

}  // namespace

ResolvedRange resolve_range(git_repository* repo, const std::string& spec,
                            const std::string& side) {
  const std::string where = side + " '" + spec + "'";
  ResolvedRange range{spec, {}, {}};

  if (spec.find("..") != std::string::npos) {
    git_revspec revspec{};
    check(git_revparse(&revspec, repo, spec.c_str()), "unknown revision in " + where);
    ObjectPtr from(revspec.from);
    ObjectPtr to(revspec.to);
    if (!(revspec.flags & GIT_REVSPEC_RANGE) || !from || !to)
      throw Error("not a range: " + where);
    range.base = peel_to_commit(from.get(), where);
    range.head = peel_to_commit(to.get(), where);
    if (revspec.flags & GIT_REVSPEC_MERGE_BASE) {
      const git_oid tips[2] = {range.base, range.head};
      check(git_merge_base(&range.base, repo, &tips[0], &tips[1]),
            "no merge base in " + where);
    }
  } else {
    git_object* raw = nullptr;
    check(git_revparse_single(&raw, repo, spec.c_str()), "unknown revision in " + where);
    ObjectPtr object(raw);
    range.head = peel_to_commit(object.get(), where);
    git_commit* commit_raw = nullptr;
    check(git_commit_lookup(&commit_raw, repo, &range.head), "looking up " + where);
    CommitPtr commit(commit_raw);
    if (git_commit_parentcount(commit.get()) == 0)
      throw Error("root commit has no parent, give BASE..HEAD: " + where);
    range.base = *git_commit_parent_id(commit.get(), 0);
  }

  if (git_oid_equal(&range.base, &range.head))
    throw Error("empty range (base and head are the same commit): " + where);
  if (check(git_graph_descendant_of(repo, &range.base, &range.head), "walking " + where) == 1)
    throw Error("empty range (head is an ancestor of base): " + where);
  return range;
}

}  // namespace portdiff
