#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace portdiff {

/*
 * SHA-1 of raw bytes, for the patch-id (git hashes the patch text itself, which
 * libgit2 offers no call for: git_odb_hash prefixes an object header). Fed in
 * pieces, finished once.
 */
class Sha1 final {
 public:
  Sha1();
  void update(std::string_view bytes);
  /// The digest; the object starts over afterwards.
  std::array<std::uint8_t, 20> finish();

 private:
  void block(const std::uint8_t* data);
  std::array<std::uint32_t, 5> state_{};
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t length_ = 0;  // bytes fed so far
};

}  // namespace portdiff
