// Field cases P10-P24 (tests/cases/README.md), each on a
// repository the test builds, checked against git where git has an answer.

#include "git_oracle.h"
#include "repo_fixture.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace portdiff_test {
namespace {

using nlohmann::json;

json report_json(const TempRepo& repo, std::vector<std::string> args) {
  args.insert(args.begin(), {"--repo", repo.dir()});
  args.insert(args.end(), {"--format", "json"});
  const CommandResult run = run_portdiff(args);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return json::parse(run.out);
}

json row_of(const json& report, const std::string& path) {
  for (const json& row : report["files"])
    if (row["path"] == path) return row;
  ADD_FAILURE() << "no row " << path;
  return json();
}

/// P10's repository: the source baseline made f.py executable, neither patch
/// touches the mode; `other` is the target's added line.
Ports baseline_mode_ports(const TempRepo& repo, const std::string& other) {
  repo.apply({{"f.py", "a\nb\n"}});
  const std::string base = repo.commit("base");
  repo.git("branch b2");
  repo.set_executable("f.py", true);
  const std::string exec = repo.commit("exec");
  repo.apply({{"f.py", "a\nNEW\nb\n"}});
  const std::string port1 = repo.commit("port1");
  repo.git("checkout -q b2");
  repo.apply({{"f.py", "a\n" + other + "\nb\n"}});
  const std::string port2 = repo.commit("port2");
  return {exec + ".." + port1, base + ".." + port2};
}

TEST(CasesP10toP24, P10BaselineModeNeverHidesALineDifference) {
  TempRepo repo;
  const Ports ports = baseline_mode_ports(repo, "OTHER");
  const json row = row_of(report_json(repo, {ports.source, ports.target}), "f.py");
  EXPECT_EQ(row["class"], oracle_classify(repo, ports, false).at("f.py").verdict);
  EXPECT_EQ(row["class"], "different");
  EXPECT_EQ(row["difference"], "lines");
  EXPECT_EQ(row["first_difference"], "source +\"NEW\\n\" · target +\"OTHER\\n\"");
  const CommandResult brief =
      run_portdiff({"--repo", repo.dir(), ports.source, ports.target, "--brief"});
  EXPECT_TRUE(contains(brief.out, "changed lines differ")) << brief.out;
  EXPECT_FALSE(contains(brief.out, "mode")) << brief.out;
}

TEST(CasesP10toP24, P10BaselineModeIsAFinalFileNote) {
  TempRepo repo;
  const Ports ports = baseline_mode_ports(repo, "NEW");
  const json row = row_of(report_json(repo, {ports.source, ports.target}), "f.py");
  EXPECT_EQ(row["class"], oracle_classify(repo, ports, false).at("f.py").verdict);
  EXPECT_EQ(row["class"], "identical");
  EXPECT_EQ(row["final_equal"], false);
  EXPECT_EQ(row["final_note"], "final modes differ");
}

TEST(CasesP10toP24, P10ModeChangedByOnePatchStillDiffers) {
  TempRepo repo;
  const Ports ports =
      make_ports(repo, {{"x.sh", "a\n"}}, {{"x.sh", "a\nb\n"}}, {}, {{"x.sh", "a\nc\n"}});
  // Rebuild the source with a chmod: lines and mode both differ; the lines win.
  repo.git("checkout -q source");
  repo.set_executable("x.sh", true);
  repo.git("commit -q -a --amend -m change");
  const std::string head = repo.git("rev-parse HEAD").substr(0, 40);
  const Ports chmod{ports.source.substr(0, 42) + head, ports.target};
  const json row = row_of(report_json(repo, {chmod.source, chmod.target}), "x.sh");
  EXPECT_EQ(row["class"], oracle_classify(repo, chmod, false).at("x.sh").verdict);
  EXPECT_EQ(row["difference"], "lines");
  const CommandResult md = run_portdiff({"--repo", repo.dir(), chmod.source, chmod.target});
  EXPECT_TRUE(contains(md.out, "source: mode 100644→100755; target: modified")) << md.out;
  EXPECT_TRUE(contains(md.out, "first difference: source `+\"b\\n\"` · target `+\"c\\n\"`"))
      << md.out;
}

TEST(CasesP10toP24, P24SingularAndPlural) {
  TempRepo repo;
  const Ports ports =
      make_ports(repo, {{"a.py", "a\n"}}, {{"a.py", "a\nb\n"}}, {}, {{"a.py", "a\nb\n"}});
  const CommandResult md = run_portdiff({"--repo", repo.dir(), ports.source, ports.target});
  EXPECT_TRUE(contains(md.out, "identical — 1 file: 1 identical")) << md.out;
  EXPECT_TRUE(contains(md.out, "The union of both patches has 1 file;")) << md.out;
  EXPECT_FALSE(contains(md.out, "1 files")) << md.out;
}

TEST(CasesP10toP24, P24LongMarkdownSaysItExceedsAPullRequestDescription) {
  TempRepo repo;
  Edit base, change;
  for (int i = 0; i < 700; ++i) {
    const std::string name =
        "pkg/a_module_whose_name_is_long_enough_to_fill_a_table_row_" + std::to_string(i) + ".py";
    base[name] = "x = 1\n";
    change[name] = "x = 1\ny = 2\n";
  }
  const Ports ports = make_ports(repo, base, change, {}, change);
  const CommandResult md = run_portdiff({"--repo", repo.dir(), ports.source, ports.target});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  ASSERT_GT(md.out.size(), 65536u);
  EXPECT_TRUE(contains(md.out, "more than the 65,536 a pull request description holds"));
  EXPECT_TRUE(contains(md.out, "`--brief`"));
  const CommandResult brief =
      run_portdiff({"--repo", repo.dir(), ports.source, ports.target, "--brief"});
  EXPECT_FALSE(contains(brief.out, "65,536")) << brief.out;
}

std::string stable_patch_id(const TempRepo& repo, const std::string& diff_command) {
  const CommandResult run = run_command("cd " + shell_quote(repo.dir()) + " && " + diff_command +
                                        " | git patch-id --stable");
  return run.out.substr(0, 40);
}

json find_json(const TempRepo& repo, const std::string& commit, const std::string& glob,
               std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"--repo",     repo.dir(), "find",     commit,
                                   "--branches", glob,       "--format", "json"};
  args.insert(args.end(), more.begin(), more.end());
  const CommandResult run = run_portdiff(args);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "");  // no progress off a terminal
  return json::parse(run.out);
}

json branch_of(const json& found, const std::string& name) {
  for (const json& branch : found["branches"])
    if (branch["branch"] == name) return branch;
  ADD_FAILURE() << "no branch " << name;
  return json();
}

std::vector<std::string> branch_names(const json& found) {
  std::vector<std::string> names;
  for (const json& branch : found["branches"]) names.push_back(branch["branch"]);
  return names;
}

/// A file `f.py` with a common base and a release branch forked from it.
void base_and_release(const TempRepo& repo, const std::string& text) {
  repo.apply({{"f.py", text}});
  repo.commit("base");
  repo.git("branch release-1");
}

TEST(CasesP10toP24, P11FindTakesAMergeByItsFirstParent) {
  TempRepo repo;
  base_and_release(repo, "a\nb\n");
  repo.git("checkout -q -b feature");
  repo.apply({{"f.py", "a\nfix 1\nb\n"}});
  repo.commit("fix part 1");
  repo.apply({{"f.py", "a\nfix 1\nb\nfix 2\n"}});
  repo.commit("fix part 2");
  repo.git("checkout -q main");
  repo.apply({{"g.py", "unrelated\n"}});
  repo.commit("main moves on");
  repo.git("merge -q --no-ff -m 'Merge the fix' feature");
  const std::string merge = repo.rev("HEAD");
  repo.git("checkout -q release-1");
  repo.git("cherry-pick -x -m1 " + merge);
  const std::string port = repo.rev("HEAD");

  const json found = find_json(repo, merge, "release-*");
  EXPECT_EQ(found["parents"], 2);
  EXPECT_EQ(found["patch_id"], stable_patch_id(repo, "git diff " + merge + "^1 " + merge));
  const json ports = branch_of(found, "release-1")["ports"];
  ASSERT_EQ(ports.size(), 1u);
  EXPECT_EQ(ports[0]["commit"], port);
  EXPECT_EQ(ports[0]["found_by"],
            json::parse(R"(["cherry-pick-trailer", "patch-id", "changed-lines", "same-subject"])"));
  // The pair report reads the merge the same way.
  const json report = report_json(repo, {merge, port});
  EXPECT_EQ(report["totals"]["identical"], 1);
  const CommandResult text = run_portdiff(
      {"--repo", repo.dir(), "find", merge, "--branches", "release-*", "--format", "text"});
  EXPECT_TRUE(contains(text.out, "a merge of 2 parents: its patch is against the first parent"))
      << text.out;
}

TEST(CasesP10toP24, P12ABranchThatContainsTheCommitSaysSo) {
  TempRepo repo;
  base_and_release(repo, "a\n");
  repo.apply({{"f.py", "a\nfix\n"}});
  const std::string fix = repo.commit("fix");
  repo.git("branch -f release-2 main");
  EXPECT_EQ(
      repo.git("branch --contains " + fix + " --format='%(refname:short)' --list 'release-*'"),
      "release-2\n");  // git's answer
  const json found = find_json(repo, fix, "release-*");
  EXPECT_EQ(branch_of(found, "release-1")["contains_commit"], false);
  EXPECT_EQ(branch_of(found, "release-2")["contains_commit"], true);
  const CommandResult text = run_portdiff(
      {"--repo", repo.dir(), "find", fix, "--branches", "release-*", "--format", "text"});
  EXPECT_TRUE(contains(text.out, "release-2  contains the commit\n")) << text.out;
  EXPECT_TRUE(contains(text.out, "release-1  no port\n")) << text.out;
}

TEST(CasesP10toP24, P13AnInheritedPortIsListedOnce) {
  TempRepo repo;
  base_and_release(repo, "a\nb\n");
  repo.git("checkout -q -b topic");
  repo.apply({{"f.py", "a\nfix\nb\n"}});
  const std::string fix = repo.commit("fix");
  repo.git("checkout -q release-1");
  repo.git("cherry-pick -x " + fix);
  const std::string own = repo.rev("HEAD");
  repo.git("checkout -q main");
  repo.apply({{"g.py", "g\n"}});
  repo.commit("main moves on");
  repo.git("cherry-pick " + fix);  // main gets the fix; later releases fork from it
  const std::string on_main = repo.rev("HEAD");
  for (const char* branch : {"release-2", "release-3", "release-10"})
    repo.git(std::string("branch ") + branch);

  const json found = find_json(repo, fix, "release-*");
  EXPECT_EQ(branch_names(found),
            (std::vector<std::string>{"release-1", "release-2", "release-3", "release-10"}));
  EXPECT_EQ(branch_of(found, "release-1")["ports"][0]["commit"], own);
  EXPECT_EQ(branch_of(found, "release-2")["ports"][0]["commit"], on_main);
  for (const char* later : {"release-3", "release-10"}) {
    EXPECT_EQ(branch_of(found, later)["ports"], json::array()) << later;
    EXPECT_EQ(branch_of(found, later)["inherited"],
              json::parse("[{\"commit\": \"" + on_main + "\", \"from\": \"release-2\"}]"));
  }
  // --report compares each commit once: two columns, not four.
  const json report = find_json(repo, fix, "release-*", {"--report"})["report"];
  EXPECT_EQ(report["targets"].size(), 2u);
}

TEST(CasesP10toP24, P14FindMatchesByTheReportsRuleAndHintsBySubject) {
  TempRepo repo;
  base_and_release(repo, "x\na\ny\n");
  repo.git("checkout -q release-1");
  repo.apply({{"f.py", "x\na2\ny\n"}});
  repo.commit("release-1 drifts");
  repo.git("branch release-2");
  repo.git("checkout -q main");
  repo.apply({{"f.py", "x\na\nFIX\ny\n"}});
  const std::string fix = repo.commit("fix the thing");
  repo.git("checkout -q release-1");
  repo.apply({{"f.py", "x\na2\nFIX\ny\n"}});
  const std::string drifted = repo.commit("backport: fix");  // no -x, other subject
  repo.git("checkout -q release-2");
  repo.apply({{"f.py", "x\na2\nFIX2\ny\n"}});
  const std::string by_hand = repo.commit("[2.x] fix the thing (#42)");
  // git's answers: the stable patch-id sees the context and misses the first port;
  // the report calls it identical.
  ASSERT_NE(stable_patch_id(repo, "git show " + drifted), stable_patch_id(repo, "git show " + fix));
  EXPECT_EQ(report_json(repo, {fix, drifted})["totals"]["identical"], 1);

  const json found = find_json(repo, fix, "release-*");
  EXPECT_EQ(
      branch_of(found, "release-1")["ports"],
      json::parse(
          "[{\"commit\": \"" + drifted +
          "\", \"found_by\": [\"changed-lines\"], \"hint\": false, \"unresolved_marks\": []}]"));
  EXPECT_EQ(
      branch_of(found, "release-2")["ports"],
      json::parse(
          "[{\"commit\": \"" + by_hand +
          "\", \"found_by\": [\"same-subject\"], \"hint\": true, \"unresolved_marks\": []}]"));
  const CommandResult text = run_portdiff(
      {"--repo", repo.dir(), "find", fix, "--branches", "release-*", "--format", "text"});
  EXPECT_TRUE(contains(text.out, "release-1  " + drifted.substr(0, 12) + "  changed lines\n"))
      << text.out;
  EXPECT_TRUE(contains(text.out, "release-2  " + by_hand.substr(0, 12) + "  same subject (hint)\n"))
      << text.out;
}

TEST(CasesP10toP24, P15FindSearchesRemoteTrackingBranches) {
  TempRepo origin;
  base_and_release(origin, "a\n");
  origin.apply({{"f.py", "a\nfix\n"}});
  const std::string fix = origin.commit("fix");
  origin.git("checkout -q release-1");
  origin.git("cherry-pick -x " + fix);
  const std::string port = origin.rev("HEAD");
  TempRepo clone;
  clone.git("fetch -q " + shell_quote(origin.dir()) + " '+refs/heads/*:refs/remotes/origin/*'");
  clone.git("symbolic-ref refs/remotes/origin/HEAD refs/remotes/origin/main");
  EXPECT_EQ(clone.git("branch -r --list 'origin/release-*'"),
            "  origin/release-1\n");  // git's view

  const json found = find_json(clone, fix, "origin/release-*");
  EXPECT_EQ(branch_names(found), std::vector<std::string>{"origin/release-1"});
  EXPECT_EQ(branch_of(found, "origin/release-1")["ports"][0]["commit"], port);
  // origin/HEAD names another branch: not listed twice.
  EXPECT_EQ(branch_names(find_json(clone, fix, "origin/*")),
            (std::vector<std::string>{"origin/main", "origin/release-1"}));
}

TEST(CasesP10toP24, P16FindShowsProgressOnlyOnATerminal) {
  TempRepo repo;
  base_and_release(repo, "a\n");
  repo.apply({{"f.py", "a\nfix\n"}});
  const std::string fix = repo.commit("fix");
  repo.git("checkout -q release-1");
  repo.apply({{"g.py", "g\n"}});
  repo.commit("release-1 moves on");
  find_json(repo, fix, "release-*");  // checks that stderr stays empty off a terminal
  if (run_command("command -v script").exit_code != 0) GTEST_SKIP() << "no script(1)";
  const std::string command = shell_quote(PORTDIFF_EXE) + " --repo " + shell_quote(repo.dir()) +
                              " find " + fix + " --branches 'release-*' --format text" +
                              " >/dev/null";
  const CommandResult tty = run_command("script -qec " + shell_quote(command) + " /dev/null");
  EXPECT_TRUE(contains(tty.out, "\rportdiff find: 1/1 commits")) << tty.out;
}

TEST(CasesP10toP24, P24BranchesInVersionOrder) {
  TempRepo repo;
  base_and_release(repo, "a\n");
  for (const char* branch : {"v2.10.0", "v2.9.0", "v2.9.10", "v2.9.9", "v10.0"})
    repo.git(std::string("branch ") + branch);
  repo.apply({{"f.py", "a\nfix\n"}});
  const std::string fix = repo.commit("fix");
  EXPECT_EQ(branch_names(find_json(repo, fix, "v*")),
            (std::vector<std::string>{"v2.9.0", "v2.9.9", "v2.9.10", "v2.10.0", "v10.0"}));
}

/// P17's shape: the source branch moved pkg/core to pkg/_core before its change.
Ports moved_directory_ports(const TempRepo& repo) {
  repo.apply({{"pkg/core/a.py", "x\ny\n"}, {"pkg/core/b.py", "p\nq\n"}, {"pkg/core/c.py", "c\n"}});
  const std::string base = repo.commit("base");
  repo.git("checkout -q -b source " + base);
  repo.git("mv pkg/core pkg/_core");
  const std::string moved = repo.commit("move core to _core");
  repo.apply({{"pkg/_core/a.py", "x\nFIX\ny\n"},
              {"pkg/_core/b.py", "p\nl1\nl2\nl3\nq\n"},
              {"pkg/_core/c.py", "c\nsource only\n"}});
  const std::string source_head = repo.commit("fix");
  repo.git("checkout -q -b target " + base);
  repo.apply({{"pkg/core/a.py", "x\nFIX\ny\n"},
              {"pkg/core/b.py", "p\nl1\nl2\nL3\nq\n"},
              {"pkg/core/c.py", "c\ntarget only\n"}});
  const std::string target_head = repo.commit("fix (port)");
  return {moved + ".." + source_head, base + ".." + target_head};
}

TEST(CasesP10toP24, P17MovedFilesPairByContent) {
  TempRepo repo;
  const Ports ports = moved_directory_ports(repo);
  // git's lines of the moved file equal the target's: the pairing's premise.
  const auto source = oracle_patch(repo, ports.source, false);
  const auto target = oracle_patch(repo, ports.target, false);
  ASSERT_EQ(source.at("pkg/_core/a.py").added, target.at("pkg/core/a.py").added);

  const json report = report_json(repo, {ports.source, ports.target});
  const json a = row_of(report, "pkg/core/a.py");
  EXPECT_EQ(a["class"], "identical");
  EXPECT_EQ(a["pairing"], "content");
  EXPECT_EQ(a["source_path"], "pkg/_core/a.py");
  const json b = row_of(report, "pkg/core/b.py");  // 2 of 3 lines in common
  EXPECT_EQ(b["class"], "different");
  EXPECT_EQ(b["pairing"], "content");
  // c.py's changes share no line: two rows, as before.
  EXPECT_EQ(row_of(report, "pkg/_core/c.py")["class"], "only-source");
  EXPECT_EQ(row_of(report, "pkg/core/c.py")["class"], "only-target");
  EXPECT_EQ(report["totals"]["files"], 4);
  const CommandResult md = run_portdiff({"--repo", repo.dir(), ports.source, ports.target});
  EXPECT_TRUE(contains(md.out,
                       "| `pkg/core/a.py` | +1/-0 | +1/-0 | equal | paired by content "
                       "with source `pkg/_core/a.py` |"))
      << md.out;
}

TEST(CasesP10toP24, P17MapPathPairsEveryFileUnderTheDirectory) {
  TempRepo repo;
  const Ports ports = moved_directory_ports(repo);
  const json report =
      report_json(repo, {ports.source, ports.target, "--map-path", "pkg/_core/=pkg/core"});
  EXPECT_EQ(report["totals"]["files"], 3);
  for (const char* name : {"a.py", "b.py", "c.py"}) {
    const json row = row_of(report, std::string("pkg/core/") + name);
    EXPECT_EQ(row["pairing"], "mapped") << name;
    EXPECT_EQ(row["source_path"], std::string("pkg/_core/") + name);
  }
  EXPECT_EQ(row_of(report, "pkg/core/a.py")["class"], "identical");
  EXPECT_EQ(row_of(report, "pkg/core/c.py")["class"], "different");
  // A map onto a path the source also touches loses neither source file.
  const json both = report_json(
      repo, {ports.source, ports.target, "--map-path", "pkg/_core/b.py=pkg/_core/a.py"});
  EXPECT_EQ(both["totals"]["files"], 4);
  EXPECT_EQ(row_of(both, "pkg/core/a.py")["source_path"], "pkg/_core/a.py");
  EXPECT_EQ(row_of(both, "pkg/core/b.py")["source_path"], "pkg/_core/b.py");
  const CommandResult bad =
      run_portdiff({"--repo", repo.dir(), ports.source, ports.target, "--map-path", "pkg"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err,
            "portdiff: usage: --map-path 'pkg': expected OLD=NEW, two paths (see --help)\n");
}

TEST(CasesP10toP24, P18AndP23OneSidedFilesSayWhatTheOtherHeadHas) {
  TempRepo repo;
  const Ports ports = make_ports(
      repo, {{"c.py", "c\n"}, {"d.py", "d\n"}}, {{"c.py", "c\nZ\n"}, {"d.py", "d\nW\nV\n"}},
      {{"c.py", "c\nZ\n"}, {"d.py", "d\nW\n"}},  // the target's baseline already has Z and W
      {{"tests/test_extra.py", "def test_one():\n    pass\n\n\ndef test_two():\n    pass\n"}});
  const std::string target_head = ports.target.substr(42);
  EXPECT_EQ(repo.git("show " + target_head + ":c.py"), "c\nZ\n");  // git's view of the head
  const json report = report_json(repo, {ports.source, ports.target});
  const json c = row_of(report, "c.py");
  EXPECT_EQ(c["class"], "only-source");
  EXPECT_EQ(
      c["other_head"],
      json::parse(R"({"path": "c.py", "exists": true, "holds_added": 1, "holds_deleted": 0})"));
  EXPECT_EQ(row_of(report, "d.py")["other_head"]["holds_added"], 1);  // W, not V
  EXPECT_EQ(row_of(report, "tests/test_extra.py")["other_head"]["exists"], false);
  ASSERT_EQ(report["test_files"].size(), 1u);
  EXPECT_EQ(report["test_files"][0]["only_target"], json::parse(R"(["test_one", "test_two"])"));

  const CommandResult md = run_portdiff({"--repo", repo.dir(), ports.source, ports.target});
  EXPECT_TRUE(contains(md.out,
                       "| `c.py` | +1/-0 | exists at the target head, holding 1 of the 1 "
                       "added line |"))
      << md.out;
  EXPECT_TRUE(contains(md.out,
                       "| `d.py` | +2/-0 | exists at the target head, holding 1 of the 2 "
                       "added lines |"))
      << md.out;
  EXPECT_TRUE(
      contains(md.out, "- source: file absent at the source head; target: 2 test functions."))
      << md.out;
  EXPECT_TRUE(contains(md.out, "- unique to target: 2 — `test_one`, `test_two`.")) << md.out;
}

TEST(CasesP10toP24, P19ExcerptsShowTheDifferingBytes) {
  TempRepo repo;
  const std::string pad(80, 'x');
  const Ports ports =
      make_ports(repo, {{"long.py", "a\n"}, {"cr.py", "a\n"}, {"tab.py", "a\n"}, {"eof.py", "a\n"}},
                 {{"long.py", "a\n" + pad + "A" + pad + "\n"},
                  {"cr.py", "a\nb\r\n"},
                  {"tab.py", "a\n\tb\n"},
                  {"eof.py", "a\nb"}},
                 {},
                 {{"long.py", "a\n" + pad + "B" + pad + "\n"},
                  {"cr.py", "a\nb\n"},
                  {"tab.py", "a\n    b\n"},
                  {"eof.py", "a\nb\n"}});
  const json report = report_json(repo, {ports.source, ports.target});
  const std::string window(39, 'x');  // the bytes kept before the difference
  EXPECT_EQ(row_of(report, "long.py")["first_difference"],
            "source +...\"" + std::string(20, 'x') + "A" + window + "\"... · target +...\"" +
                std::string(20, 'x') + "B" + window + "\"...");
  EXPECT_EQ(row_of(report, "cr.py")["first_difference"], "source +\"b\\r\\n\" · target +\"b\\n\"");
  EXPECT_EQ(row_of(report, "tab.py")["first_difference"],
            "source +\"\\tb\\n\" · target +\"    b\\n\"");
  EXPECT_EQ(row_of(report, "eof.py")["first_difference"], "source +\"b\" · target +\"b\\n\"");
  for (const char* path : {"long.py", "cr.py", "tab.py", "eof.py"})
    EXPECT_EQ(row_of(report, path)["class"], oracle_classify(repo, ports, false).at(path).verdict);
}

TEST(CasesP10toP24, P19FirstDifferenceIsAnInterdiff) {
  TempRepo repo;
  // The target's baseline already had "new": its port adds only what the source
  // added after it; and it adds an extra line in the middle of another file.
  const Ports ports =
      make_ports(repo, {{"m.py", "old\n"}, {"n.py", "z\n"}},
                 {{"m.py", "new\nmore\n"}, {"n.py", "z\na\nb\nc\n"}}, {{"m.py", "new\n"}},
                 {{"m.py", "new\nmore\n"}, {"n.py", "z\na\nX\nb\nc\n"}});
  const json report = report_json(repo, {ports.source, ports.target});
  // Paired by position this would read source -"old\n" · target +"more\n".
  EXPECT_EQ(row_of(report, "m.py")["first_difference"], "source -\"old\\n\" · target (none)");
  EXPECT_EQ(row_of(report, "n.py")["first_difference"], "source (none) · target +\"X\\n\"");
  EXPECT_EQ(row_of(report, "m.py")["size"],
            json::parse(R"({"common": 1, "source_only": 2, "target_only": 0})"));
  EXPECT_EQ(row_of(report, "n.py")["size"],
            json::parse(R"({"common": 3, "source_only": 0, "target_only": 1})"));
}

TEST(CasesP10toP24, P20DifferentRowsAreSizedAndRankedLargestFirst) {
  TempRepo repo;
  std::string big_source = "a\n", big_target = "a\n";
  for (int i = 0; i < 10; ++i) {
    big_source += "s" + std::to_string(i) + "\n";
    big_target += "t" + std::to_string(i) + "\n";
  }
  const Ports ports = make_ports(repo, {{"a_small.py", "a\n"}, {"b_big.py", "a\n"}},
                                 {{"a_small.py", "a\nb \n"}, {"b_big.py", big_source}}, {},
                                 {{"a_small.py", "a\nb\n"}, {"b_big.py", big_target}});
  const CommandResult md = run_portdiff({"--repo", repo.dir(), ports.source, ports.target});
  const std::size_t big = md.out.find(
      "| `b_big.py` | +10/-0 | +10/-0 | changed lines differ | "
      "0 common, 10 source-only, 10 target-only |");
  const std::size_t small = md.out.find(
      "| `a_small.py` | +1/-0 | +1/-0 | only trailing whitespace "
      "differs | 0 common, 1 source-only, 1 target-only |");
  ASSERT_NE(big, std::string::npos) << md.out;
  ASSERT_NE(small, std::string::npos) << md.out;
  EXPECT_LT(big, small);
}

TEST(CasesP10toP24, P21LabelsAndTheCommitsOfEachRange) {
  TempRepo repo;
  const Ports ports =
      make_ports(repo, {{"a.py", "a\n"}}, {{"a.py", "a\nb\n"}}, {}, {{"a.py", "a\nb\n"}});
  // Two commits on the target side: its baseline move is outside the range, so
  // add one more inside it.
  repo.git("checkout -q target");
  repo.apply({{"b.py", "b\n"}});
  const std::string extra = repo.commit("target: one more [with `ticks`]");
  const std::string target = ports.target.substr(0, 40) + ".." + extra;
  const json report = report_json(repo, {ports.source, target});
  // Default labels: the branches at the heads.
  EXPECT_EQ(report["source"]["label"], "source");
  EXPECT_EQ(report["target"]["label"], "target");
  // The commits, oldest first, as git log lists them.
  for (const auto& [side, range] :
       {std::pair{"source", ports.source}, std::pair{"target", target}}) {
    std::string expected;
    for (const json& commit : report[side]["commits"])
      expected +=
          commit["commit"].get<std::string>() + " " + commit["subject"].get<std::string>() + "\n";
    EXPECT_EQ(expected, repo.git("log --reverse --format='%H %s' " + range)) << side;
  }
  const CommandResult md =
      run_portdiff({"--repo", repo.dir(), ports.source, target, "--label", "v2.7.1", "v2.9.0"});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_TRUE(contains(md.out, "# Backport comparison: `v2.7.1` vs `v2.9.0`")) << md.out;
  EXPECT_TRUE(contains(md.out, "| file | v2.7.1 +/- | v2.9.0 +/- | final files | notes |"))
      << md.out;
  EXPECT_TRUE(contains(md.out, "- target `v2.9.0` (`" + target + "`): `" + target.substr(0, 40) +
                                   ".." + extra + "` — 2 commits\n"))
      << md.out;
  EXPECT_TRUE(contains(
      md.out, "  - `" + extra.substr(0, 12) + "` target: one more \\[with \\`ticks\\`\\]\n"))
      << md.out;
  const CommandResult text = run_portdiff({"--repo", repo.dir(), ports.source, target, "--label",
                                           "v2.7.1", "v2.9.0", "--format", "text"});
  EXPECT_TRUE(
      contains(text.out, "(v2.9.0)\n        " + ports.target.substr(42, 12) + "  change (port)\n"))
      << text.out;
  const CommandResult matrix =
      run_portdiff({"--repo", repo.dir(), ports.source, target, target, "--label", "a", "b"});
  EXPECT_EQ(matrix.exit_code, 2);
  EXPECT_TRUE(contains(matrix.err, "--label names a source and one target")) << matrix.err;
}

TEST(CasesP10toP24, P22MatrixMarkdownHasTestFunctionRows) {
  TempRepo repo;
  const std::string test = "def test_a():\n    pass\n";
  const Ports ports = make_ports(repo, {{"tests/test_x.py", test}},
                                 {{"tests/test_x.py", test + "\n\ndef test_b():\n    pass\n"}}, {},
                                 {{"tests/test_x.py", test + "\n\ndef test_c():\n    pass\n"}});
  const CommandResult md =
      run_portdiff({"--repo", repo.dir(), ports.source, ports.target, ports.source});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  // The matrix shows what each pair report shows, under one heading per pair.
  const CommandResult pair = run_portdiff({"--repo", repo.dir(), ports.source, ports.target});
  const std::string table =
      "| `test_b` | added | absent | — |\n| `test_c` | absent | added | — |\n";
  EXPECT_TRUE(contains(pair.out, table)) << pair.out;
  EXPECT_TRUE(contains(md.out, "### `tests/test_x.py` × `target`\n")) << md.out;
  EXPECT_TRUE(contains(md.out, table)) << md.out;
  EXPECT_TRUE(contains(md.out, "### `tests/test_x.py` × `source`\n")) << md.out;
}

}  // namespace
}  // namespace portdiff_test
