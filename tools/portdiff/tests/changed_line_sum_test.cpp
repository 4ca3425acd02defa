// Note [Changed-line sum]: the sum of a commit's `git show` diff rules a commit
// out of the changed-lines rule only when its changed lines, as a multiset, differ.
// Oracle: the multiset of `git diff -U0`'s added minus deleted lines, which the test
// counts itself; the commits change the same lines on other baselines, as a rename,
// differently, and with a binary file (which makes the sum rule nothing out).

#include "find/changed_line_sum.h"

#include "find/patch_id.h"
#include "git_handle.h"
#include "git_oracle.h"
#include "repo_fixture.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace portdiff_test {
namespace {

/// Each line's count over the commit's patch: +1 per addition, -1 per deletion.
std::map<std::string, long> oracle_multiset(const TempRepo& repo, const std::string& commit,
                                            bool& binary) {
  std::map<std::string, long> counts;
  binary = false;
  for (const auto& [path, file] : oracle_patch(repo, commit + "^.." + commit, false)) {
    binary = binary || file.binary;
    for (const std::string& line : file.added) ++counts[line];
    for (const std::string& line : file.deleted) --counts[line];
  }
  for (auto it = counts.begin(); it != counts.end();)
    it = it->second == 0 ? counts.erase(it) : ++it;
  return counts;
}

portdiff::ChangedLineSum sum_of(git_repository* repo, const std::string& hex) {
  git_oid id;
  EXPECT_EQ(git_oid_fromstr(&id, hex.c_str()), 0);
  const portdiff::CommitPtr commit = portdiff::lookup_commit(repo, id);
  const portdiff::DiffPtr diff = portdiff::show_diff(repo, commit.get());
  portdiff::ChangedLineSum sum;
  git_oid patch_id;
  portdiff::stable_patch_id(repo, diff.get(), patch_id, &sum);
  return sum;
}

TEST(ChangedLineSum, RulesOutExactlyTheCommitsWhoseChangedLinesDiffer) {
  std::string body;
  for (int i = 0; i < 40; ++i) body += "line " + std::to_string(i) + "\n";
  TempRepo repo;
  repo.apply({{"f.txt", "a\nb\nc\n" + body + "end"}, {"g.bin", std::string("x\0y\n", 4)}});
  repo.commit("base");
  std::map<std::string, std::string> commits;  // name -> sha
  repo.git("checkout -q -b fix");
  repo.apply({{"f.txt", "a\nB\nc\n" + body + "end"}});
  commits["fix"] = repo.commit("fix");
  repo.git("checkout -q -b drifted main");
  repo.apply({{"f.txt", "a\nb\nC\n" + body + "end"}});
  repo.commit("drift");
  repo.apply({{"f.txt", "a\nB\nC\n" + body + "end"}});
  commits["same edit, drifted"] = repo.commit("fix on a drifted baseline");
  repo.git("checkout -q -b moved main");
  repo.apply({{"f.txt", std::nullopt}, {"h/f.txt", "a\nB\nc\n" + body + "end"}});
  commits["same edit, renamed"] = repo.commit("fix, moved");  // git show: a rename
  repo.git("checkout -q -b other main");
  repo.apply({{"f.txt", "a\nX\nc\n" + body + "end"}});
  commits["other edit"] = repo.commit("another fix");
  repo.git("checkout -q -b newline main");
  repo.apply({{"f.txt", "a\nB\nc\n" + body + "end\n"}});
  commits["and a final newline"] = repo.commit("fix and newline");
  repo.git("checkout -q -b binary main");
  repo.apply({{"f.txt", "a\nB\nc\n" + body + "end"}, {"g.bin", std::string("x\0z\n", 4)}});
  commits["with a binary file"] = repo.commit("fix and binary");

  portdiff::LibGit2 libgit2;
  const portdiff::RepositoryPtr git = portdiff::open_repository(repo.dir());
  for (const auto& [a, a_sha] : commits)
    for (const auto& [b, b_sha] : commits) {
      SCOPED_TRACE(a + " / " + b);
      bool a_binary = false, b_binary = false;
      const bool same =
          oracle_multiset(repo, a_sha, a_binary) == oracle_multiset(repo, b_sha, b_binary);
      const bool may_match = sum_of(git.get(), a_sha).may_match(sum_of(git.get(), b_sha));
      if (a_binary || b_binary)
        EXPECT_TRUE(may_match);  // a binary file has no lines in the sum
      else
        EXPECT_EQ(may_match, same);
    }
  // The cases the test is meant to reach.
  bool binary = false;
  EXPECT_EQ(oracle_multiset(repo, commits["fix"], binary),
            oracle_multiset(repo, commits["same edit, renamed"], binary));
  EXPECT_NE(repo.git("show --format= --name-status " + commits["same edit, renamed"]).find("R"),
            std::string::npos);
  EXPECT_NE(oracle_multiset(repo, commits["fix"], binary),
            oracle_multiset(repo, commits["and a final newline"], binary));
}

}  // namespace
}  // namespace portdiff_test
