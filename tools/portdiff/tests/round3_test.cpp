// Field cases P10-P24 (shared/cases/graph-cases-3.md, "portdiff round 3"), each on a
// repository the test builds, checked against git where git has an answer.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "git_oracle.h"
#include "repo_fixture.h"

namespace portdiff_test {
namespace {

using nlohmann::json;

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

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

TEST(Round3, P10BaselineModeNeverHidesALineDifference) {
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

TEST(Round3, P10BaselineModeIsAFinalFileNote) {
  TempRepo repo;
  const Ports ports = baseline_mode_ports(repo, "NEW");
  const json row = row_of(report_json(repo, {ports.source, ports.target}), "f.py");
  EXPECT_EQ(row["class"], oracle_classify(repo, ports, false).at("f.py").verdict);
  EXPECT_EQ(row["class"], "identical");
  EXPECT_EQ(row["final_equal"], false);
  EXPECT_EQ(row["final_note"], "final modes differ");
}

TEST(Round3, P10ModeChangedByOnePatchStillDiffers) {
  TempRepo repo;
  const Ports ports = make_ports(repo, {{"x.sh", "a\n"}}, {{"x.sh", "a\nb\n"}}, {},
                                 {{"x.sh", "a\nc\n"}});
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

TEST(Round3, P24SingularAndPlural) {
  TempRepo repo;
  const Ports ports = make_ports(repo, {{"a.py", "a\n"}}, {{"a.py", "a\nb\n"}}, {},
                                 {{"a.py", "a\nb\n"}});
  const CommandResult md = run_portdiff({"--repo", repo.dir(), ports.source, ports.target});
  EXPECT_TRUE(contains(md.out, "identical — 1 file: 1 identical")) << md.out;
  EXPECT_TRUE(contains(md.out, "The union of both patches has 1 file;")) << md.out;
  EXPECT_FALSE(contains(md.out, "1 files")) << md.out;
}

TEST(Round3, P24LongMarkdownSaysItExceedsAPullRequestDescription) {
  TempRepo repo;
  Edit base, change;
  for (int i = 0; i < 700; ++i) {
    const std::string name = "pkg/a_module_whose_name_is_long_enough_to_fill_a_table_row_" + std::to_string(i) + ".py";
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

}  // namespace
}  // namespace portdiff_test
