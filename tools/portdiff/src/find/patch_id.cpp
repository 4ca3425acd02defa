#include "find/patch_id.h"

#include "diff/content.h"
#include "diff/side_diff.h"
#include "error.h"

#include <openssl/err.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace portdiff {
namespace {

/*
 * SHA-1 of raw bytes by OpenSSL's EVP interface: git hashes the patch text
 * itself, which libgit2 has no call for (git_odb_hash prefixes an object header).
 * Fed in pieces; finish() gives the digest and starts over.
 */
class Sha1 final {
 public:
  Sha1() : context_(EVP_MD_CTX_new()) {
    if (!context_) fail("allocating a SHA-1 context");
    start();
  }
  void update(std::string_view bytes) {
    if (EVP_DigestUpdate(context_.get(), bytes.data(), bytes.size()) != 1) fail("hashing");
  }
  std::array<std::uint8_t, 20> finish() {
    std::array<std::uint8_t, 20> digest{};
    unsigned length = 0;
    if (EVP_DigestFinal_ex(context_.get(), digest.data(), &length) != 1 || length != digest.size())
      fail("finishing a SHA-1");
    start();
    return digest;
  }

 private:
  struct Free final {
    void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
  };
  void start() {
    if (EVP_DigestInit_ex(context_.get(), EVP_sha1(), nullptr) != 1) fail("starting a SHA-1");
  }
  [[noreturn]] static void fail(const std::string& what) {
    char reason[256] = "unknown error";
    if (const unsigned long code = ERR_get_error(); code != 0)
      ERR_error_string_n(code, reason, sizeof reason);
    throw Error("OpenSSL: " + what + ": " + reason);
  }
  std::unique_ptr<EVP_MD_CTX, Free> context_;
};

/// diffcore-delta's view of a blob: the bytes of its chunks (a line, or 64 bytes
/// of one), counted per chunk hash; CR before LF is skipped in text.
std::unordered_map<unsigned, std::size_t> chunk_counts(std::string_view data) {
  constexpr unsigned hash_base = 107927;
  const bool text = !looks_binary(data);
  std::unordered_map<unsigned, std::size_t> counts;
  unsigned accum1 = 0, accum2 = 0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < data.size(); ++i) {
    const unsigned c = static_cast<unsigned char>(data[i]);
    if (text && c == '\r' && i + 1 < data.size() && data[i + 1] == '\n') continue;
    const unsigned old1 = accum1;
    accum1 = (accum1 << 7) ^ (accum2 >> 25);
    accum2 = (accum2 << 7) ^ (old1 >> 25);
    accum1 += c;
    if (++n < 64 && c != '\n') continue;
    counts[(accum1 + accum2 * 0x61) % hash_base] += n;
    n = 0;
    accum1 = accum2 = 0;
  }
  if (n > 0) counts[(accum1 + accum2 * 0x61) % hash_base] += n;
  return counts;
}

BlobPtr lookup_blob(git_repository* repo, const git_oid& id) {
  git_blob* raw = nullptr;
  check(git_blob_lookup(&raw, repo, &id), "reading blob " + to_hex(id));
  return BlobPtr(raw);
}

std::string_view bytes_of(git_blob* blob) {
  return {static_cast<const char*>(git_blob_rawcontent(blob)),
          static_cast<std::size_t>(git_blob_rawsize(blob))};
}

/// The line counts of a hunk header `@@ -a,b +c,d @@` (1 where a count is left
/// out), as git patch-id reads them.
void hunk_counts(std::string_view line, long& before, long& after) {
  std::size_t at = 4;
  const auto number = [&](long& into) {
    std::size_t digits = 0;
    while (at + digits < line.size() && std::isdigit(static_cast<unsigned char>(line[at + digits])))
      ++digits;
    at += digits;
    if (at < line.size() && line[at] == ',') {
      ++at;
      into = 0;
      while (at < line.size() && std::isdigit(static_cast<unsigned char>(line[at])))
        into = into * 10 + (line[at++] - '0');
    } else {
      into = 1;
    }
  };
  number(before);
  at += 2;  // " +"
  number(after);
}

}  // namespace

DiffPtr show_diff(git_repository* repo, git_commit* commit, const std::set<std::string>* paths) {
  git_commit* parent_raw = nullptr;
  check(git_commit_parent(&parent_raw, commit, 0),
        "reading the parent of " + to_hex(*git_commit_id(commit)));
  CommitPtr parent(parent_raw);
  git_tree *old_raw = nullptr, *new_raw = nullptr;
  check(git_commit_tree(&old_raw, parent.get()), "reading a tree");
  TreePtr old_tree(old_raw);
  check(git_commit_tree(&new_raw, commit), "reading a tree");
  TreePtr new_tree(new_raw);
  git_diff_options options;
  check(git_diff_options_init(&options, GIT_DIFF_OPTIONS_VERSION), "diff options");
  options.flags |= GIT_DIFF_INDENT_HEURISTIC;  // diff.indentHeuristic, on in git show
  std::vector<char*> exact;                    // not owned: the strings of `paths`
  if (paths != nullptr) {
    for (const std::string& path : *paths) exact.push_back(const_cast<char*>(path.c_str()));
    options.pathspec.strings = exact.data();
    options.pathspec.count = exact.size();
    options.flags |= GIT_DIFF_DISABLE_PATHSPEC_MATCH;  // exact paths, no globs
  }
  git_diff* raw = nullptr;
  check(git_diff_tree_to_tree(&raw, repo, old_tree.get(), new_tree.get(), &options),
        "diffing " + to_hex(*git_commit_id(commit)));
  DiffPtr diff(raw);
  git_diff_find_options renames;
  check(git_diff_find_options_init(&renames, GIT_DIFF_FIND_OPTIONS_VERSION), "rename options");
  renames.flags = GIT_DIFF_FIND_RENAMES;
  renames.rename_threshold = 50;
  renames.rename_limit = 1000;  // git's diff.renameLimit default
  check(git_diff_find_similar(diff.get(), &renames),
        "finding renames in " + to_hex(*git_commit_id(commit)));
  return diff;
}

int git_similarity(git_repository* repo, const git_oid& old_blob, const git_oid& new_blob) {
  if (git_oid_equal(&old_blob, &new_blob)) return 100;
  const BlobPtr a = lookup_blob(repo, old_blob), b = lookup_blob(repo, new_blob);
  const std::string_view x = bytes_of(a.get()), y = bytes_of(b.get());
  const std::size_t larger = std::max(x.size(), y.size());
  if (larger == 0) return 100;
  // The bytes of src's chunks that dst has too (diffcore_count_changes), scored
  // out of git's MAX_SCORE and printed truncated to a percentage.
  const auto src = chunk_counts(x), dst = chunk_counts(y);
  std::size_t copied = 0;
  for (const auto& [hash, count] : src) {
    const auto found = dst.find(hash);
    if (found != dst.end()) copied += std::min(count, found->second);
  }
  constexpr unsigned long long max_score = 60000;
  const auto score = static_cast<int>(copied * max_score / larger);
  return static_cast<int>(score * 100LL / static_cast<long long>(max_score));
}

bool stable_patch_id(git_repository* repo, git_diff* diff, git_oid& id, ChangedLineSum* sum) {
  for (std::size_t i = 0; i < git_diff_num_deltas(diff); ++i) {
    // The diff owns its deltas, which are not const: only the score libgit2
    // prints in the header is replaced by git's.
    auto* delta = const_cast<git_diff_delta*>(git_diff_get_delta(diff, i));
    if (delta->status == GIT_DELTA_RENAMED)
      delta->similarity =
          static_cast<std::uint16_t>(git_similarity(repo, delta->old_file.id, delta->new_file.id));
  }
  std::string patch;
  for (std::size_t i = 0; i < git_diff_num_deltas(diff); ++i) {
    git_patch* raw = nullptr;
    check(git_patch_from_diff(&raw, diff, i), "printing a patch");
    PatchPtr file(raw);
    if (sum != nullptr) sum->add(file.get());
    git_buf text = GIT_BUF_INIT;
    check(git_patch_to_buf(&text, file.get()), "printing a patch");
    const std::string_view printed(text.ptr, text.size);
    // git prints the `---`/`+++` lines only above hunks; libgit2 also for a file
    // without any (a new empty file, a mode change). A file without hunks is all
    // header, so dropping them there cannot drop a changed line.
    const bool no_hunks = git_patch_num_hunks(file.get()) == 0;
    // And libgit2 says "Binary files ... differ" for a binary file whose content did
    // not change (moved as it is, or its mode alone), where git prints nothing.
    const git_diff_delta* delta = git_diff_get_delta(diff, i);
    const bool same_content = git_oid_equal(&delta->old_file.id, &delta->new_file.id) != 0;
    for (std::size_t at = 0; at < printed.size();) {
      const std::size_t end = printed.find('\n', at);
      const std::size_t next = end == std::string_view::npos ? printed.size() : end + 1;
      const std::string_view line = printed.substr(at, next - at);
      at = next;
      if (no_hunks && (line.substr(0, 4) == "--- " || line.substr(0, 4) == "+++ ")) continue;
      if (same_content && line.substr(0, 13) == "Binary files ") continue;
      patch += line;
    }
    git_buf_dispose(&text);
  }
  return patch_id_of_text(patch, id);
}

bool patch_id_of_text(std::string_view patch, git_oid& id) {
  std::array<std::uint8_t, 20> sum{};
  Sha1 hash;
  // Adds one file's hash into the sum, byte by byte with carry (flush_one_hunk).
  const auto flush = [&] {
    const std::array<std::uint8_t, 20> digest = hash.finish();
    unsigned carry = 0;
    for (std::size_t i = 0; i < sum.size(); ++i) {
      carry += sum[i] + digest[i];
      sum[i] = static_cast<std::uint8_t>(carry);
      carry >>= 8;
    }
  };
  const auto starts = [](std::string_view line, std::string_view prefix) {
    return line.substr(0, prefix.size()) == prefix;
  };
  std::size_t hashed = 0;
  long before = -1, after = -1;
  bool binary = false;
  std::string pre_id, post_id;
  for (std::size_t at = 0; at < patch.size();) {
    const std::size_t end = patch.find('\n', at);
    const std::size_t next = end == std::string_view::npos ? patch.size() : end + 1;
    const std::string_view line = patch.substr(at, next - at);
    at = next;
    if (starts(line, "\\ ") && line.size() > 12) continue;  // "\ No newline at end of file"
    if (hashed == 0 && !starts(line, "diff ")) continue;
    if (before == -1) {
      if (starts(line, "GIT binary patch") || starts(line, "Binary files")) {
        binary = true;
        before = 0;
        hash.update(pre_id);
        hash.update(post_id);
        flush();
        continue;
      }
      if (starts(line, "index ")) {
        const std::size_t dots = line.find("..");
        if (dots != std::string_view::npos) {
          std::size_t stop = line.find(' ', dots);
          if (stop == std::string_view::npos) stop = line.size() - 1;
          pre_id = std::string(line.substr(6, dots - 6));
          post_id = std::string(line.substr(dots + 2, stop - dots - 2));
        }
        continue;
      }
      if (starts(line, "--- ")) {
        before = after = 1;
      } else if (!std::isalpha(static_cast<unsigned char>(line[0]))) {
        break;
      }
    }
    if (binary) {
      if (starts(line, "diff ")) {
        binary = false;
        before = -1;
      }
      continue;
    }
    if (before == 0 && after == 0) {
      if (starts(line, "@@ -")) {
        hunk_counts(line, before, after);
        continue;
      }
      if (!starts(line, "diff ")) break;
      flush();  // another file's header: each file is hashed apart (--stable)
      before = after = -1;
    }
    if (line[0] == '-' || line[0] == ' ') --before;
    if (line[0] == '+' || line[0] == ' ') --after;
    std::string bare;  // without any whitespace
    for (const char c : line)
      if (!std::isspace(static_cast<unsigned char>(c))) bare += c;
    hashed += bare.size();
    hash.update(bare);
  }
  flush();
  std::memcpy(id.id, sum.data(), sum.size());
  return hashed != 0;
}

}  // namespace portdiff
