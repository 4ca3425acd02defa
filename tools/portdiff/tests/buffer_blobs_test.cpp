// Note [Unhashed blobs]: buffers handed to libgit2 as blobs of an in-memory object
// database, without hashing them. Checked directly (the bytes and distinct ids) and
// through git's -U0 reading, whose lines must equal `git diff -U0`'s on the ends
// where buffers are small, empty or cut: an emptied file, a file filled from empty,
// an edit in the last block (nothing trimmed), one far from a long common tail
// (trimmed), a missing final newline.

#include "diff/buffer_blobs.h"

#include "diff/content.h"
#include "diff/diff_rule.h"
#include "git_handle.h"
#include "git_oracle.h"
#include "repo_fixture.h"

#include <gtest/gtest.h>

#include <string>

namespace portdiff_test {
namespace {

std::string text_of(const git_blob* blob) {
  return {static_cast<const char*>(git_blob_rawcontent(blob)),
          static_cast<std::size_t>(git_blob_rawsize(blob))};
}

std::vector<std::string> lines_of(const portdiff::LineSeq& seq) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < seq.size(); ++i) out.emplace_back(seq.line(i));
  return out;
}

TEST(BufferBlobs, ServesTheBytesUnderDistinctIds) {
  portdiff::LibGit2 libgit2;
  portdiff::BufferBlobs blobs;
  const std::string with_nul("x\0y\n", 4);
  const portdiff::BlobPtr a = blobs.blob("same\n");
  const portdiff::BlobPtr b = blobs.blob("same\n");
  const portdiff::BlobPtr empty = blobs.blob("");
  const portdiff::BlobPtr nul = blobs.blob(with_nul);
  EXPECT_EQ(text_of(a.get()), "same\n");
  EXPECT_EQ(text_of(b.get()), "same\n");
  EXPECT_EQ(text_of(empty.get()), "");
  EXPECT_EQ(text_of(nul.get()), with_nul);
  // Equal ids would make libgit2 call two different ends unmodified.
  EXPECT_FALSE(git_oid_equal(git_blob_id(a.get()), git_blob_id(b.get())));
  EXPECT_FALSE(git_oid_equal(git_blob_id(b.get()), git_blob_id(empty.get())));
}

TEST(BufferBlobs, GitReadingEqualsGitDiffU0) {
  std::string tail;  // a common tail of many 1024-byte blocks
  for (int i = 0; i < 300; ++i) tail += "common tail line " + std::to_string(i) + "\n";
  const portdiff_test::Edit base = {{"emptied.txt", "one\ntwo\n"},
                                    {"filled.txt", ""},
                                    {"last_block.txt", tail + "last\n"},
                                    {"long_tail.txt", "first\n" + tail},
                                    {"no_newline.txt", tail + "end"}};
  const portdiff_test::Edit head = {{"emptied.txt", ""},
                                    {"filled.txt", "now\nfilled\n"},
                                    {"last_block.txt", tail + "last, edited\n"},
                                    {"long_tail.txt", "first, edited\nsecond\n" + tail},
                                    {"no_newline.txt", tail + "end\n"}};
  TempRepo repo;
  repo.apply(base);
  const std::string before = repo.commit("base");
  repo.apply(head);
  const std::string after = repo.commit("head");
  const auto oracle = oracle_patch(repo, before + ".." + after, false);

  portdiff::LibGit2 libgit2;
  const portdiff::RepositoryPtr git = portdiff::open_repository(repo.dir());
  const auto read = [&](const std::string& commit, const std::string& path) {
    git_oid id;
    EXPECT_EQ(git_oid_fromstr(&id, repo.rev(commit + ":" + path).c_str()), 0);
    return portdiff::read_content(git.get(), GIT_FILEMODE_BLOB, id);
  };
  ASSERT_EQ(oracle.size(), base.size());
  for (const auto& [path, expected] : oracle) {
    SCOPED_TRACE(path);
    const portdiff::PatchLines lines = portdiff::read_git(read(before, path), read(after, path));
    EXPECT_EQ(lines_of(lines.added), expected.added);
    EXPECT_EQ(lines_of(lines.deleted), expected.deleted);
  }
}

}  // namespace
}  // namespace portdiff_test
