// `portdiff audit`: every commit of a range looked up on each target and compared,
// checked against `git cherry -v` where git has an answer.

#include "git_oracle.h"
#include "repo_fixture.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace portdiff_test {
namespace {

using nlohmann::json;

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
    differing.push_back({{"path", file["path"]},
                         {"path_quoted", file["path_quoted"]},
                         {"class", file["class"]},
                         {"difference", file["difference"]}});
  EXPECT_EQ(hand["files"], differing);
  const json& hint = cell_of(audit, r.fixes[3], 0);
  EXPECT_EQ(hint["status"], "hint");
  EXPECT_EQ(hint["port"], r.hint);
  EXPECT_EQ(hint["hint"], true);
  EXPECT_EQ(hint["files"], json::array());
  EXPECT_EQ(
      audit["targets"][0]["no_source"],
      json::parse(
          "[{\"commit\": \"" + r.hint + "\", \"subject\": \"[1.x] fix i (#7)\", " +
          "\"hint_of\": \"" + r.fixes[3] + "\", \"unresolved_marks\": []}, {\"commit\": \"" +
          r.own1 +
          "\", \"subject\": \"release-1 only\", \"hint_of\": null, \"unresolved_marks\": []}]"));
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

// In a shallow clone the audit searches the history that is there, as find does
// (P26): git cherry answers within the clone, and so does the audit; each target
// says where its history ends, JSON says the search is not complete, exit 3. A
// range that reaches the boundary is an error (its oldest patch is not there).
TEST(Audit, AShallowCloneIsSearchedWhereItsHistoryIs) {
  AuditRepo r;
  TempRepo clone;
  std::filesystem::remove_all(clone.dir());
  const CommandResult cloned = run_command("git clone -q --depth 1 --no-single-branch file://" +
                                           r.repo.dir() + " " + shell_quote(clone.dir()));
  ASSERT_EQ(cloned.exit_code, 0) << cloned.err;
  clone.git("fetch -q --deepen 2 origin main");  // the range origin/main~2..origin/main
  ASSERT_EQ(clone.git("rev-parse --is-shallow-repository"), "true\n");
  std::istringstream shallow_file(clone.git("rev-parse --git-path shallow"));
  std::string shallow_path;
  std::getline(shallow_file, shallow_path);
  const std::string shallow =
      run_command("cat " + shell_quote(clone.dir() + "/" + shallow_path)).out;
  const std::vector<std::string> targets = {"origin/release-1", "origin/release-2"};
  const std::string range = "origin/main~2..origin/main";

  const CommandResult run = run_portdiff({"--repo", clone.dir(), "audit", range, "--onto",
                                          targets[0], "--onto", targets[1], "--format", "json"});
  ASSERT_EQ(run.exit_code, 3) << run.err;
  const json audit = json::parse(run.out);
  EXPECT_EQ(audit["complete"], false);
  ASSERT_EQ(audit["commits"].size(), 2U);
  for (std::size_t t = 0; t < targets.size(); ++t) {
    // git's answers within the clone: where the target's history ends (the
    // boundary commits it reaches), and git cherry in both directions.
    json ends = json::array();
    const std::string reached = clone.git("rev-list " + targets[t]);
    std::istringstream lines(shallow);
    for (std::string end; std::getline(lines, end);)
      if (contains(reached, end)) ends.push_back(end);
    EXPECT_EQ(audit["targets"][t]["history_ends"], ends) << targets[t];
    EXPECT_EQ(ends.size(), 1U) << targets[t];
    const std::map<std::string, char> cherry =
        git_cherry(clone, targets[t], "origin/main", "origin/main~2");
    for (const json& row : audit["commits"]) {
      const std::string status = row["cells"][t]["status"];
      const auto listed = cherry.find(row["commit"]);
      ASSERT_NE(listed, cherry.end()) << row.dump();  // git lists every commit of the range
      if (listed->second == '-') {
        EXPECT_EQ(status, "identical") << row.dump();
      }
      if (status == "not-ported") {
        EXPECT_EQ(listed->second, '+') << row.dump();
      }
    }
    const std::map<std::string, char> own = git_cherry(clone, "origin/main", targets[t], "");
    for (const json& commit : audit["targets"][t]["no_source"]) {
      const auto listed = own.find(commit["commit"]);
      ASSERT_NE(listed, own.end()) << commit.dump();
      EXPECT_EQ(listed->second, '+') << commit.dump();
      EXPECT_FALSE(contains(shallow, commit["commit"].get<std::string>()))
          << "a boundary commit's patch is not here";
    }
  }
  EXPECT_EQ(cell_of(audit, r.fixes[2], 0)["status"], "different");  // found by its trailer

  const CommandResult text = run_portdiff(
      {"--repo", clone.dir(), "audit", range, "--onto", targets[0], "--format", "text", "--check"});
  EXPECT_EQ(text.exit_code, 1) << text.err;  // --check's 1 comes first
  const std::string end = audit["targets"][0]["history_ends"][0];
  EXPECT_TRUE(contains(text.out, "        history ends at " + end.substr(0, 12) +
                                     " (shallow clone)  older commits not searched\n"))
      << text.out;
  EXPECT_TRUE(contains(text.out, "shallow clone: the search ends at 1 boundary commit;"))
      << text.out;
  const CommandResult markdown =
      run_portdiff({"--repo", clone.dir(), "audit", range, "--onto", targets[0]});
  EXPECT_EQ(markdown.exit_code, 3);
  EXPECT_TRUE(contains(markdown.out, "  - history ends at `" + end +
                                         "` (shallow clone): older commits not searched\n"))
      << markdown.out;

  // A range whose commits reach the boundary: the oldest has no parent here.
  const std::string merge =
      clone
          .git(
              "commit-tree 'origin/release-2^{tree}' -p origin/main~2 -p origin/release-2 -m merge")
          .substr(0, 40);
  clone.git("branch merged " + merge);
  const CommandResult cut =
      run_portdiff({"--repo", clone.dir(), "audit", "merged~1..merged", "--onto", targets[0]});
  EXPECT_EQ(cut.exit_code, 2);
  EXPECT_TRUE(contains(cut.err, "source 'merged~1..merged' reaches the shallow boundary"))
      << cut.err;
  EXPECT_TRUE(contains(cut.err, "git fetch --deepen=N or --unshallow")) << cut.err;
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

TEST(Audit, AnEquivalentPortThatDiffersInWhitespaceSaysWhyGitCallsItEquivalent) {
  TempRepo repo;
  repo.apply({{"f.py", "a\nb\nc\n"}});
  repo.commit("base");
  repo.git("tag base");
  repo.git("branch release");
  repo.apply({{"f.py", "a\nx = 2**32\nc\n"}});
  const std::string fix = repo.commit("bits");
  repo.git("checkout -q release");
  repo.apply({{"f.py", "a\nx = 2 ** 32\nc\n"}});
  const std::string port = repo.commit("bits (formatted)");
  ASSERT_EQ(git_cherry(repo, "release", "main", "base").at(fix), '-');  // git: equivalent
  const CommandResult run = run_portdiff(
      {"--repo", repo.dir(), "audit", "base..main", "--onto", "release", "--format", "text"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "different " + port.substr(0, 12) +
                                    " (equal patch-id: git's ignores whitespace): f.py (lines)"))
      << run.out;
}

}  // namespace
}  // namespace portdiff_test
