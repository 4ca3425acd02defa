// `portdiff audit`: every commit of a range looked up on each target and compared,
// checked against `git cherry -v` where git has an answer.

#include "repo_fixture.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace portdiff_test {
namespace {

using nlohmann::json;

/// `git cherry -v UPSTREAM HEAD LIMIT`: each listed commit and its sign ('-': an
/// equivalent patch is in UPSTREAM; '+': none).
std::map<std::string, char> git_cherry(const TempRepo& repo, const std::string& upstream,
                                       const std::string& head, const std::string& limit) {
  std::map<std::string, char> signs;
  std::istringstream in(repo.git("cherry -v " + upstream + " " + head + " " + limit));
  for (std::string line; std::getline(in, line);) signs[line.substr(2, 40)] = line[0];
  return signs;
}

/// main forks release-1 at `base` and release-2 after the first fix; each release
/// has a commit of its own. release-1: a clean pick of "fix a" (no -x), a pick of
/// "add y" with -x whose lines were changed by hand, and a change of its own
/// under the subject "fix i" (a hint); release-2: a clean pick of "fix c".
struct AuditRepo final {
  TempRepo repo;
  std::vector<std::string> fixes;  // main's commits after base, oldest first
  std::string own1, own2, hand, hint;
  AuditRepo() {
    repo.apply({{"f.py", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"}, {"g.py", "x\n"}});
    repo.commit("base");
    repo.git("tag base");
    repo.git("branch release-1");
    repo.apply({{"f.py", "A\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"}});
    fixes.push_back(repo.commit("fix a"));
    repo.git("branch release-2");
    repo.apply({{"f.py", "A\nb\nC\nd\ne\nf\ng\nh\ni\nj\n"}});
    fixes.push_back(repo.commit("fix c"));
    repo.apply({{"g.py", "x\ny\n"}});
    fixes.push_back(repo.commit("add y"));
    repo.apply({{"f.py", "A\nb\nC\nd\ne\nf\ng\nh\nI\nj\n"}});
    fixes.push_back(repo.commit("fix i"));

    repo.git("checkout -q release-1");
    repo.apply({{"own.py", "1\n"}});
    own1 = repo.commit("release-1 only");
    repo.git("cherry-pick " + fixes[0]);
    repo.git("cherry-pick -x " + fixes[2]);
    repo.apply({{"g.py", "x\nY\n"}});
    repo.git("commit -q --amend --no-edit -a");
    hand = repo.rev("HEAD");
    repo.apply({{"f.py", "A\nb\nc\nd\ne\nf\ng\nh\ni\nJ\n"}});
    hint = repo.commit("[1.x] fix i (#7)");

    repo.git("checkout -q release-2");
    repo.apply({{"own.py", "2\n"}});
    own2 = repo.commit("release-2 only");
    repo.git("cherry-pick " + fixes[1]);
    repo.git("checkout -q main");
  }
  CommandResult audit(std::vector<std::string> extra) const {
    std::vector<std::string> args = {"--repo", repo.dir(),  "audit",  "base..main",
                                     "--onto", "release-1", "--onto", "release-2"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_portdiff(args);
  }
};

const json& cell_of(const json& audit, const std::string& commit, std::size_t target) {
  for (const json& row : audit["commits"])
    if (row["commit"] == commit) return row["cells"][target];
  static const json none;
  ADD_FAILURE() << "no commit " << commit;
  return none;
}

TEST(Audit, EveryCommitOfTheRangeAgreesWithGitCherry) {
  AuditRepo r;
  const CommandResult run = r.audit({"--format", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json audit = json::parse(run.out);
  EXPECT_EQ(audit["schema"], "portdiff-audit/1");
  ASSERT_EQ(audit["commits"].size(), r.fixes.size());
  const std::vector<std::string> targets = {"release-1", "release-2"};
  for (std::size_t t = 0; t < targets.size(); ++t) {
    EXPECT_EQ(audit["targets"][t]["label"], targets[t]);
    EXPECT_EQ(audit["targets"][t]["fork"],
              r.repo.git("merge-base main " + targets[t]).substr(0, 40));
    // git cherry lists the range's commits the target does not contain: '-' has an
    // equivalent patch there (a clean pick: identical, by patch-id), '+' none.
    const std::map<std::string, char> cherry = git_cherry(r.repo, targets[t], "main", "base");
    for (const std::string& fix : r.fixes) {
      const json& cell = cell_of(audit, fix, t);
      const auto listed = cherry.find(fix);
      if (listed == cherry.end()) {
        EXPECT_EQ(cell["status"], "contained") << targets[t] << " " << fix;
        continue;
      }
      if (listed->second == '-') {
        EXPECT_EQ(cell["status"], "identical") << targets[t] << " " << fix;
        EXPECT_TRUE(contains(cell["found_by"].dump(), "\"patch-id\"")) << cell.dump();
      }
      if (cell["status"] == "not-ported") {
        EXPECT_EQ(listed->second, '+') << fix;
      }
    }
    // The target's own commits: git cherry's '-' ones have a source; each one
    // portdiff says has none is a '+' for git.
    const std::map<std::string, char> own = git_cherry(r.repo, "main", targets[t], "base");
    for (const json& commit : audit["targets"][t]["no_source"]) {
      const auto listed = own.find(commit["commit"]);
      ASSERT_NE(listed, own.end()) << commit.dump();
      EXPECT_EQ(listed->second, '+') << commit.dump();
    }
  }
  // What git cannot say: the hand-resolved pick is found by its trailer and its
  // rows differ as the pair report says; the subject alone is only a hint.
  const json& hand = cell_of(audit, r.fixes[2], 0);
  EXPECT_EQ(hand["status"], "different");
  EXPECT_EQ(hand["port"], r.hand);
  EXPECT_EQ(hand["found_by"][0], "cherry-pick-trailer");
  const CommandResult pair =
      run_portdiff({"--repo", r.repo.dir(), r.fixes[2], r.hand, "--format", "json", "--brief"});
  const json pair_report = json::parse(pair.out);
  json differing = json::array();
  for (const json& file : pair_report["files"])
    differing.push_back(
        {{"path", file["path"]}, {"class", file["class"]}, {"difference", file["difference"]}});
  EXPECT_EQ(hand["files"], differing);
  const json& hint = cell_of(audit, r.fixes[3], 0);
  EXPECT_EQ(hint["status"], "hint");
  EXPECT_EQ(hint["port"], r.hint);
  EXPECT_EQ(hint["hint"], true);
  EXPECT_EQ(hint["files"], json::array());
  EXPECT_EQ(audit["targets"][0]["no_source"],
            json::parse("[{\"commit\": \"" + r.hint + "\", \"subject\": \"[1.x] fix i (#7)\", " +
                        "\"hint_of\": \"" + r.fixes[3] + "\"}, {\"commit\": \"" + r.own1 +
                        "\", \"subject\": \"release-1 only\", \"hint_of\": null}]"));
  EXPECT_EQ(audit["targets"][1]["no_source"][0]["commit"], r.own2);
}

TEST(Audit, HintsCheckAndTheOtherFormats) {
  AuditRepo r;
  // --hints compares the hint, and says so.
  const json with = json::parse(r.audit({"--hints", "--format", "json"}).out);
  const json& hint = cell_of(with, r.fixes[3], 0);
  EXPECT_EQ(hint["status"], "different");
  EXPECT_EQ(hint["hint"], true);
  EXPECT_EQ(hint["files"][0]["path"], "f.py");

  const CommandResult text = r.audit({"--format", "text", "--hints"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "different " + r.hint.substr(0, 12) + " (hint): f.py (lines)"))
      << text.out;
  EXPECT_TRUE(contains(text.out, "  " + r.own1.substr(0, 12) + "  \"release-1 only\"\n") ||
              contains(text.out, "  " + r.own1.substr(0, 12) + "  release-1 only\n"))
      << text.out;
  const CommandResult markdown = r.audit({});
  EXPECT_TRUE(contains(markdown.out, "| `" + r.fixes[2].substr(0, 12) + "` | add y | different `" +
                                         r.hand.substr(0, 12) + "`: `g.py` (lines) |"))
      << markdown.out;
  EXPECT_TRUE(contains(markdown.out,
                       "hint `" + r.hint.substr(0, 12) + "`, not compared (--hints compares it)"))
      << markdown.out;
  EXPECT_TRUE(contains(markdown.out, "## Commits on `release-2` with no source in the range (1)"))
      << markdown.out;

  // --brief keeps the commits that some target has not ported identically.
  const json brief = json::parse(r.audit({"--brief", "--format", "json"}).out);
  const json full = json::parse(r.audit({"--format", "json"}).out);
  std::vector<std::string> kept, expected;
  for (const json& row : brief["commits"]) kept.push_back(row["commit"]);
  for (const json& row : full["commits"]) {
    bool done = true;
    for (const json& cell : row["cells"])
      done = done && (cell["status"] == "identical" || cell["status"] == "contained");
    if (!done) expected.push_back(row["commit"]);
  }
  EXPECT_EQ(kept, expected);
  EXPECT_LT(kept.size(), full["commits"].size());

  EXPECT_EQ(r.audit({"--check"}).exit_code, 1);  // not everything is ported
  const CommandResult clean = run_portdiff(
      {"--repo", r.repo.dir(), "audit", "base..main~3", "--onto", "release-1", "--check"});
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;  // "fix a": a clean pick
  const CommandResult usage =
      run_portdiff({"--repo", r.repo.dir(), "audit", "main", "--onto", "release-1"});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_TRUE(contains(usage.err, "expected BASE..HEAD")) << usage.err;
}

// A range with no commit to audit is an error, as an empty range is: a range of
// merges only (git cherry lists nothing for it) must not read "all ported".
TEST(Audit, ARangeOfMergesOnlyIsAnError) {
  AuditRepo r;
  r.repo.git("checkout -q -b merged base");
  r.repo.git("merge -q --no-ff -m 'merge release-2' release-2");
  ASSERT_EQ(r.repo.git("cherry -v release-1 merged merged^2"), "");  // git: nothing to list
  const std::string range = "merged^2..merged";
  const CommandResult run =
      run_portdiff({"--repo", r.repo.dir(), "audit", range, "--onto", "release-1", "--check"});
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err, "portdiff: no commit to audit in source '" + range +
                         "': its 1 commit is a merge, and merges are not audited (as git "
                         "cherry skips them)\n");
}

}  // namespace
}  // namespace portdiff_test
