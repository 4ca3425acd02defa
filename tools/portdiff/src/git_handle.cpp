#include "git_handle.h"

#include "error.h"

#include <string>

namespace portdiff {

LibGit2::LibGit2() {
  check(git_libgit2_init(), "initialising libgit2");
  // libgit2 re-hashes every object it reads; git does not, and on large patches
  // the re-hashing is a quarter of portdiff's run time. Objects come from the
  // user's own repository, which git itself trusts the same way.
  check(git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 0), "configuring libgit2");
}

LibGit2::~LibGit2() { git_libgit2_shutdown(); }

int check(int result, std::string_view what) {
  if (result >= 0) return result;
  std::string message(what);
  const git_error* last = git_error_last();
  if (last != nullptr && last->message != nullptr) {
    message += ": ";
    message += last->message;
  } else {
    message += ": libgit2 error " + std::to_string(result);
  }
  throw Error(message);
}

RepositoryPtr open_repository(const std::string& dir) {
  git_repository* raw = nullptr;
  check(git_repository_open_ext(&raw, dir.c_str(), 0, nullptr),
        "not a git repository: '" + dir + "'");
  return RepositoryPtr(raw);
}

CommitPtr lookup_commit(git_repository* repo, const git_oid& id) {
  git_commit* raw = nullptr;
  check(git_commit_lookup(&raw, repo, &id), "looking up commit " + to_hex(id));
  return CommitPtr(raw);
}

TreePtr commit_tree(git_repository* repo, const git_oid& id) {
  const auto commit = lookup_commit(repo, id);
  git_tree* tree_raw = nullptr;
  check(git_commit_tree(&tree_raw, commit.get()), "reading the tree of " + to_hex(id));
  return TreePtr(tree_raw);
}

std::string to_hex(const git_oid& id) {
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &id);
  return hex;
}

}  // namespace portdiff
