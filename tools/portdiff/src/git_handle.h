#pragma once

#include <git2.h>

#include <memory>
#include <string_view>

namespace portdiff {

/*
 * Ownership of libgit2 objects. Every git_* handle portdiff obtains lives in a
 * GitPtr whose deleter is the matching git_*_free, so an Error thrown half-way
 * through a stage releases everything already acquired. LibGit2 is the RAII guard
 * for git_libgit2_init/shutdown; main() holds exactly one for the whole run.
 */

template <typename T, void (*Free)(T*)>
struct GitFree final {
  void operator()(T* handle) const noexcept { Free(handle); }
};

template <typename T, void (*Free)(T*)>
using GitPtr = std::unique_ptr<T, GitFree<T, Free>>;

using RepositoryPtr = GitPtr<git_repository, git_repository_free>;
using ObjectPtr = GitPtr<git_object, git_object_free>;
using CommitPtr = GitPtr<git_commit, git_commit_free>;
using TreePtr = GitPtr<git_tree, git_tree_free>;
using TreeEntryPtr = GitPtr<git_tree_entry, git_tree_entry_free>;
using BlobPtr = GitPtr<git_blob, git_blob_free>;
using DiffPtr = GitPtr<git_diff, git_diff_free>;
using PatchPtr = GitPtr<git_patch, git_patch_free>;
using RevwalkPtr = GitPtr<git_revwalk, git_revwalk_free>;
using ReferencePtr = GitPtr<git_reference, git_reference_free>;
using BranchIteratorPtr = GitPtr<git_branch_iterator, git_branch_iterator_free>;

/// Initialises libgit2 (and its process-wide settings) for the lifetime of the
/// object. Not copyable or movable: there is one per process, on main()'s stack.
class LibGit2 final {
 public:
  LibGit2();
  ~LibGit2();
  LibGit2(const LibGit2&) = delete;
  LibGit2& operator=(const LibGit2&) = delete;
};

/// Every libgit2 call goes through check(): a negative result becomes an Error
/// whose message is `what` followed by libgit2's last error. Returns `result`
/// unchanged otherwise (some calls return meaningful non-negative values).
int check(int result, std::string_view what);

/// Opens the repository containing `dir` (searching upwards, like git does).
RepositoryPtr open_repository(const std::string& dir);

/// Commit `id`; throws (through check) naming it when it is not there.
CommitPtr lookup_commit(git_repository* repo, const git_oid& id);

/// The tree of commit `id`.
TreePtr commit_tree(git_repository* repo, const git_oid& id);

/// Full 40-hex form of an object id.
std::string to_hex(const git_oid& id);

}  // namespace portdiff
