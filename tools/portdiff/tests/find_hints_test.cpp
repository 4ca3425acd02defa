// `find --report` compares a same-subject hint only when asked (--hints), and labels
// it a hint in every format; git says which branches hold a real port.

#include "repo_fixture.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace portdiff_test {
namespace {

using nlohmann::json;

std::string stable_patch_id(const TempRepo& repo, const std::string& commit) {
  return run_command("cd " + shell_quote(repo.dir()) + " && git show " + commit +
                     " | git patch-id --stable")
      .out.substr(0, 40);
}

/// main's fix; release-1 cherry-picks it with -x (a port with evidence);
/// release-2 has a commit with the fix's subject and other lines (only a hint).
struct HintRepo final {
  TempRepo repo;
  std::string fix, port, hint;
  HintRepo() {
    repo.apply({{"f.py", "a\nb\nc\n"}});
    repo.commit("base");
    repo.git("branch release-1");
    repo.git("branch release-2");
    repo.apply({{"f.py", "a\nB\nc\n"}});
    fix = repo.commit("fix b");
    repo.git("checkout -q release-1");
    repo.git("cherry-pick -x " + fix);
    port = repo.rev("HEAD");
    repo.git("checkout -q release-2");
    repo.apply({{"f.py", "a\nb\nc\nd\n"}});
    hint = repo.commit("fix b");
    repo.git("checkout -q main");
  }
  CommandResult find(std::vector<std::string> extra) const {
    std::vector<std::string> args = {"--repo", repo.dir(), "find", fix, "--branches", "release-*"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_portdiff(args);
  }
};

TEST(FindHints, AHintIsListedButComparedOnlyWithHints) {
  HintRepo r;
  // git's answers: release-1's commit is the fix's clean pick (same stable
  // patch-id, trailer); release-2's shares only the subject.
  ASSERT_EQ(stable_patch_id(r.repo, r.port), stable_patch_id(r.repo, r.fix));
  ASSERT_NE(stable_patch_id(r.repo, r.hint), stable_patch_id(r.repo, r.fix));
  ASSERT_TRUE(contains(r.repo.git("log -1 --format=%B " + r.port), r.fix));
  ASSERT_FALSE(contains(r.repo.git("log -1 --format=%B " + r.hint), "cherry picked"));

  // Without --hints: the hint is listed, labelled, and not compared.
  const CommandResult plain = r.find({"--report", "--format", "json"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const json found = json::parse(plain.out);
  EXPECT_EQ(found["branches"][0]["ports"][0]["hint"], false);
  EXPECT_EQ(found["branches"][1]["ports"][0]["commit"], r.hint);
  EXPECT_EQ(found["branches"][1]["ports"][0]["hint"], true);
  EXPECT_EQ(found["compared"], json::parse("[{\"branch\": \"release-1\", \"commit\": \"" + r.port +
                                           "\", \"hint\": false}]"));
  EXPECT_EQ(found["report"]["schema"], "portdiff/2");  // one port: a pair report
  EXPECT_EQ(found["report"]["target"]["head"], r.port);
  EXPECT_EQ(found["report"]["target"]["hint"], false);
  const CommandResult text = r.find({"--report", "--format", "text"});
  EXPECT_TRUE(
      contains(text.out, "release-2  " + r.hint.substr(0, 12) +
                             "  same subject (hint) — not compared (--hints compares it)\n"))
      << text.out;
  EXPECT_FALSE(contains(text.out, r.hint.substr(0, 12) + "..")) << text.out;

  // With --hints: compared, and called a hint in JSON, text and Markdown.
  const CommandResult hints = r.find({"--report", "--hints", "--format", "json"});
  ASSERT_EQ(hints.exit_code, 0) << hints.err;
  const json with = json::parse(hints.out);
  EXPECT_EQ(with["compared"][1], json::parse("{\"branch\": \"release-2\", \"commit\": \"" + r.hint +
                                             "\", \"hint\": true}"));
  const json& matrix = with["report"];
  ASSERT_EQ(matrix["schema"], "portdiff-matrix/1");
  ASSERT_EQ(matrix["targets"].size(), 2u);
  EXPECT_EQ(matrix["targets"][0]["label"], "release-1");
  EXPECT_EQ(matrix["targets"][0]["hint"], false);
  EXPECT_EQ(matrix["targets"][1]["label"], "release-2 (hint)");
  EXPECT_EQ(matrix["targets"][1]["hint"], true);
  EXPECT_EQ(matrix["targets"][1]["head"], r.hint);
  EXPECT_EQ(matrix["targets"][1]["identical"], false);  // its lines are not the fix's
  const CommandResult hint_text = r.find({"--report", "--hints", "--format", "text"});
  EXPECT_TRUE(contains(hint_text.out, "same subject (hint) — compared as a hint (--hints)\n"))
      << hint_text.out;
  EXPECT_TRUE(contains(hint_text.out, "(release-2 (hint))\n")) << hint_text.out;
  const CommandResult markdown = r.find({"--report", "--hints"});
  EXPECT_TRUE(contains(markdown.out, "release-2 (hint)")) << markdown.out;
  EXPECT_TRUE(contains(markdown.out, "compared as a hint")) << markdown.out;
}

TEST(FindHints, OnlyHintsAreNothingToCompareWithoutHints) {
  HintRepo r;
  const CommandResult only =
      run_portdiff({"--repo", r.repo.dir(), "find", r.fix, "--branches", "release-2", "--report"});
  EXPECT_EQ(only.exit_code, 2);
  EXPECT_TRUE(contains(only.err,
                       "nothing to compare (1 branch has only a same-subject hint; "
                       "--hints compares it)"))
      << only.err;
  // With --hints the one hint is a pair report, its target labelled a hint.
  const CommandResult pair = run_portdiff({"--repo", r.repo.dir(), "find", r.fix, "--branches",
                                           "release-2", "--report", "--hints", "--format", "json"});
  ASSERT_EQ(pair.exit_code, 0) << pair.err;
  const json report = json::parse(pair.out)["report"];
  EXPECT_EQ(report["target"]["label"], "release-2 (hint)");
  EXPECT_EQ(report["target"]["hint"], true);
  const CommandResult usage = r.find({"--hints"});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_TRUE(contains(usage.err, "--hints")) << usage.err;
}

}  // namespace
}  // namespace portdiff_test
