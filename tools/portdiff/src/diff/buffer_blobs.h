#pragma once

#include "git_handle.h"

#include <cstdint>
#include <string_view>

namespace portdiff {

/*
 * Note [Unhashed blobs]
 * git's -U0 reading diffs two buffers, not two blobs: both ends with their common
 * tail trimmed (Note [Stable diff rule]). libgit2's calls that diff buffers
 * (git_diff_buffers, git_diff_blob_to_buffer) compute the SHA-1 of each buffer they
 * are given, only to fill in the patch's ids; with libgit2's collision-detecting
 * SHA-1 that costs a third of a report on a 50 MB file, and git does not hash them
 * (P29). git_diff_blobs takes its blobs' ids as they are. So each buffer is handed
 * to libgit2 as a blob of a private, in-memory object database whose one backend
 * serves it under a made-up id (a counter) — a copy of the bytes, which costs a
 * fraction of hashing them. The ids never leave that database; they only have to
 * differ between the two ends, or libgit2 would call the file unmodified. The
 * lookup depends on libgit2's read verification being off (LibGit2 turns it off);
 * with it on, the made-up id fails that check and the lookup is an Error, never a
 * wrong diff.
 */

/// Makes blobs of bytes in memory without hashing them (Note [Unhashed blobs]).
/// Owns its in-memory repository, which the blobs refer to: it must outlive them.
/// Not thread-safe; one per diff is cheap (no files, no configuration read).
class BufferBlobs final {
 public:
  BufferBlobs();
  BufferBlobs(const BufferBlobs&) = delete;
  BufferBlobs& operator=(const BufferBlobs&) = delete;

  /// A blob holding a copy of `bytes`, with an id no other blob of this object has.
  BlobPtr blob(std::string_view bytes);

 private:
  struct Backend;
  RepositoryPtr repo_;
  Backend* backend_ = nullptr;  // not owned: the repository's object database frees it
};

}  // namespace portdiff
