#pragma once

#include "git_handle.h"

#include <string>
#include <string_view>

namespace portdiff {

/*
 * The content a patch compares for one end of a file, read from the object
 * database only (never the work tree): a regular file's blob, a symlink's target
 * (its blob, one line without a final newline) or, for a submodule, the line
 * "Subproject commit <sha>\n" that git diff shows. An absent end (mode 0) is empty.
 */
class Content final {
 public:
  Content() = default;
  explicit Content(BlobPtr blob) : blob_(std::move(blob)) {}
  explicit Content(std::string text) : owned_(std::move(text)) {}
  /// The bytes; a view into the blob itself, which this object keeps alive (no copy).
  std::string_view text() const {
    if (!blob_) return owned_;
    return {static_cast<const char*>(git_blob_rawcontent(blob_.get())),
            static_cast<std::size_t>(git_blob_rawsize(blob_.get()))};
  }

 private:
  BlobPtr blob_;
  std::string owned_;  // a submodule's line; empty for an absent end
};

Content read_content(git_repository* repo, std::uint32_t mode, const git_oid& id);

/// git's binary test without attributes: a NUL byte in the first 8000 bytes.
/// Portdiff reads no attributes at all (no .gitattributes, no .git/info/attributes),
/// so a report pinned to SHAs depends on those SHAs only.
bool looks_binary(std::string_view content);

}  // namespace portdiff
