#include "diff/content.h"

#include <cstring>

namespace portdiff {

Content read_content(git_repository* repo, std::uint32_t mode, const git_oid& id) {
  if (mode == 0) return Content();
  if (mode == GIT_FILEMODE_COMMIT) return Content("Subproject commit " + to_hex(id) + "\n");
  git_blob* raw = nullptr;
  check(git_blob_lookup(&raw, repo, &id), "reading blob " + to_hex(id));
  return Content(BlobPtr(raw));
}

bool looks_binary(std::string_view content) {
  const std::size_t scanned = content.size() < 8000 ? content.size() : 8000;
  return std::memchr(content.data(), '\0', scanned) != nullptr;
}

}  // namespace portdiff
