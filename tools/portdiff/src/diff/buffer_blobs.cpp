#include "diff/buffer_blobs.h"

#include <git2/sys/odb_backend.h>

#include <cstring>
#include <memory>

namespace portdiff {

/// The object database's one backend: it serves the bytes of the blob being made,
/// under that blob's made-up id, and nothing else.
struct BufferBlobs::Backend final {
  git_odb_backend parent;  // first, so libgit2's backend pointer is this object's
  git_oid pending_id{};
  std::string_view pending;
  std::uint64_t made = 0;

  static Backend& of(git_odb_backend* backend) { return *reinterpret_cast<Backend*>(backend); }

  static int read(void** data, std::size_t* length, git_object_t* type, git_odb_backend* backend,
                  const git_oid* id) {
    Backend& self = of(backend);
    if (!git_oid_equal(id, &self.pending_id)) return GIT_ENOTFOUND;
    // libgit2 frees what it is given, so it must come from its allocator; one byte
    // more than needed, so an empty blob is not mistaken for a failed allocation.
    void* copy = git_odb_backend_data_alloc(backend, self.pending.size() + 1);
    if (copy == nullptr) return -1;
    if (!self.pending.empty()) std::memcpy(copy, self.pending.data(), self.pending.size());
    *data = copy;
    *length = self.pending.size();
    *type = GIT_OBJECT_BLOB;
    return 0;
  }

  static void release(git_odb_backend* backend) { delete &of(backend); }
};

BufferBlobs::BufferBlobs() {
  git_odb* raw_odb = nullptr;
  check(git_odb_new(&raw_odb), "creating an in-memory object database");
  const GitPtr<git_odb, git_odb_free> odb(raw_odb);
  auto backend = std::make_unique<Backend>();
  check(git_odb_init_backend(&backend->parent, GIT_ODB_BACKEND_VERSION),
        "initialising an in-memory object database");
  backend->parent.read = &Backend::read;
  backend->parent.free = &Backend::release;
  check(git_odb_add_backend(odb.get(), &backend->parent, 1),
        "adding a backend to an in-memory object database");
  backend_ = backend.release();  // the object database frees it from here
  git_repository* raw_repo = nullptr;
  check(git_repository_wrap_odb(&raw_repo, odb.get()), "creating an in-memory repository");
  repo_.reset(raw_repo);  // holds its own reference to the object database
}

BlobPtr BufferBlobs::blob(std::string_view bytes) {
  // A counter in the first bytes: never the zero id, which libgit2 refuses, nor the
  // empty tree's, which it answers itself (the rest of that id is not zero).
  const std::uint64_t number = ++backend_->made;
  std::memset(&backend_->pending_id, 0, sizeof backend_->pending_id);
  std::memcpy(backend_->pending_id.id, &number, sizeof number);
  backend_->pending = bytes;
  git_blob* raw = nullptr;
  const int result = git_blob_lookup(&raw, repo_.get(), &backend_->pending_id);
  backend_->pending = {};
  check(result, "making a blob of a buffer");
  return BlobPtr(raw);
}

}  // namespace portdiff
