#include "content.h"

#include <cstring>

namespace portdiff {

std::string read_content(git_repository* repo, std::uint32_t mode, const git_oid& id) {
  if (mode == 0) return {};
  if (mode == GIT_FILEMODE_COMMIT) return "Subproject commit " + to_hex(id) + "\n";
  git_blob* raw = nullptr;
  check(git_blob_lookup(&raw, repo, &id), "reading blob " + to_hex(id));
  BlobPtr blob(raw);
  return std::string(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                     static_cast<std::size_t>(git_blob_rawsize(blob.get())));
}

bool looks_binary(const std::string& content) {
  const std::size_t scanned = content.size() < 8000 ? content.size() : 8000;
  return std::memchr(content.data(), '\0', scanned) != nullptr;
}

}  // namespace portdiff
