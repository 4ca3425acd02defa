#include "git_handle.h"

#include "error.h"

#include <string>
#include <sys/stat.h>
#include <unistd.h>

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
  const int status = git_repository_open_ext(&raw, dir.c_str(), 0, nullptr);
  if (status != 0) {
    // A repository owned by another user (safe.directory): said as git says it
    // (P44). libgit2 1.5 reports it as a missing `safe.directory` value, so the
    // owner is read here, as git reads it: the repository directory's.
    git_buf found = GIT_BUF_INIT;
    std::string git_dir;
    if (git_repository_discover(&found, dir.c_str(), 0, nullptr) == 0) git_dir = found.ptr;
    git_buf_dispose(&found);
    struct stat info{};
    if (!git_dir.empty() && ::stat(git_dir.c_str(), &info) == 0 && info.st_uid != ::geteuid()) {
      std::string top = git_dir;  // the work tree, or the bare repository
      if (top.size() > 6 && top.compare(top.size() - 6, 6, "/.git/") == 0)
        top.resize(top.size() - 6);
      else if (top.size() > 1 && top.back() == '/')
        top.pop_back();
      throw Error("detected dubious ownership in repository at '" + top +
                  "' (owned by another user); to add an exception for this directory, call: "
                  "git config --global --add safe.directory " +
                  top);
    }
  }
  check(status, "not a git repository: '" + dir + "'");
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
