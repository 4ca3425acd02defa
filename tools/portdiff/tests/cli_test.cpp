// The command line: exit codes, one-line errors, formats and --output.

#include "git_oracle.h"
#include "repo_fixture.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace portdiff_test {
namespace {

/// A port where `same.txt` is identical and `differs.txt` is not.
Ports mixed_ports(const TempRepo& repo) {
  return make_ports(repo, {{"same.txt", "a\n"}, {"differs.txt", "a\n"}},
                    {{"same.txt", "a\nb\n"}, {"differs.txt", "a\nb\n"}}, {},
                    {{"same.txt", "a\nb\n"}, {"differs.txt", "a\nB\n"}});
}

void expect_one_line_error(const CommandResult& run, const std::string& needle) {
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(run.out.empty());
  ASSERT_FALSE(run.err.empty());
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << run.err;  // exactly one line
  EXPECT_NE(run.err.find(needle), std::string::npos) << run.err;
}

TEST(Cli, CheckExitsOneOnlyWhenSomethingDiffers) {
  TempRepo repo;
  const Ports ports = mixed_ports(repo);
  EXPECT_EQ(run_portdiff({"--repo", repo.dir(), ports.source, ports.target}).exit_code, 0);
  EXPECT_EQ(run_portdiff({"--repo", repo.dir(), ports.source, ports.target, "--check"}).exit_code,
            1);
  EXPECT_EQ(run_portdiff({"--repo", repo.dir(), ports.source, ports.source, "--check"}).exit_code,
            0);
}

TEST(Cli, SingleCommitMeansItsParentRange) {
  TempRepo repo;
  const Ports ports = mixed_ports(repo);
  const std::string source_head = ports.source.substr(ports.source.find("..") + 2);
  const CommandResult run =
      run_portdiff({"--repo", repo.dir(), source_head, ports.target, "--format", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto report = nlohmann::json::parse(run.out);
  EXPECT_EQ(report["source"]["base"], ports.source.substr(0, 40));
  EXPECT_EQ(report["source"]["head"], source_head);
  EXPECT_EQ(report["totals"]["files"], 2);
}

TEST(Cli, NotARepository) {
  char pattern[] = "/tmp/portdiff-norepo-XXXXXX";
  const std::string dir = mkdtemp(pattern);
  expect_one_line_error(run_portdiff({"--repo", dir, "HEAD~1..HEAD", "HEAD"}),
                        "not a git repository");
  std::filesystem::remove_all(dir);
}

TEST(Cli, UnknownRevision) {
  TempRepo repo;
  const Ports ports = mixed_ports(repo);
  expect_one_line_error(run_portdiff({"--repo", repo.dir(), "nosuchref..HEAD", ports.target}),
                        "unknown revision in source 'nosuchref..HEAD'");
  expect_one_line_error(run_portdiff({"--repo", repo.dir(), ports.source, "nosuchcommit"}),
                        "unknown revision in target 'nosuchcommit'");
}

TEST(Cli, EmptyRange) {
  TempRepo repo;
  const Ports ports = mixed_ports(repo);
  expect_one_line_error(run_portdiff({"--repo", repo.dir(), "HEAD..HEAD", ports.target}),
                        "empty range");
  const std::string reversed = ports.target.substr(42) + ".." + ports.target.substr(0, 40);
  expect_one_line_error(run_portdiff({"--repo", repo.dir(), ports.source, reversed}),
                        "empty range");
}

TEST(Cli, BadUsage) {
  expect_one_line_error(run_portdiff({"a..b"}), "usage:");
  expect_one_line_error(run_portdiff({"a..b", "c..d", "--format", "xml"}), "usage:");
}

TEST(Cli, HelpDocumentsEveryOption) {
  const CommandResult run = run_portdiff({"--help"});
  EXPECT_EQ(run.exit_code, 0);
  for (const char* option : {"--repo", "SOURCE", "TARGET", "--format", "--output", "--tests",
                             "--find-renames", "--check", "Exit status"})
    EXPECT_NE(run.out.find(option), std::string::npos) << option;
}

TEST(Cli, MarkdownHasPinnedRangesAndOneTablePerClass) {
  TempRepo repo;
  const Ports ports = mixed_ports(repo);
  const CommandResult run = run_portdiff({"--repo", repo.dir(), ports.source, ports.target});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string& md = run.out;
  EXPECT_NE(md.find("`" + ports.source + "`"), std::string::npos);  // full SHAs pinned
  EXPECT_NE(md.find("`" + ports.target + "`"), std::string::npos);
  const auto oracle = oracle_classify(repo, ports, false);
  EXPECT_EQ(oracle.at("same.txt").verdict, "identical");
  EXPECT_NE(md.find("| `same.txt` | +1/-0 | +1/-0 | equal |"), std::string::npos) << md;
  EXPECT_NE(md.find("| `differs.txt` | +1/-0 | +1/-0 | changed lines differ | 0 common, 1 "
                    "source-only, 1 target-only | differ |"),
            std::string::npos)
      << md;
  for (const char* heading :
       {"## 1. Purpose", "## 2. Rules", "## 3. Totals", "### 3.1 Identical (1)",
        "### 3.2 Different (1)", "### 3.3 Only source (0)", "### 3.4 Only target (0)",
        "## 4. Test functions"})
    EXPECT_NE(md.find(heading), std::string::npos) << heading;
}

TEST(Cli, TextViewAndOutputFile) {
  TempRepo repo;
  const Ports ports = mixed_ports(repo);
  const CommandResult text =
      run_portdiff({"--repo", repo.dir(), ports.source, ports.target, "--format", "text"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("2 files (source 2, target 2): 1 identical"), std::string::npos)
      << text.out;

  const std::string output = repo.dir() + "/report.json";
  const CommandResult to_file = run_portdiff(
      {"--repo", repo.dir(), ports.source, ports.target, "--format", "json", "--output", output});
  ASSERT_EQ(to_file.exit_code, 0) << to_file.err;
  EXPECT_TRUE(to_file.out.empty());
  std::ifstream in(output);
  std::stringstream content;
  content << in.rdbuf();
  EXPECT_EQ(nlohmann::json::parse(content.str())["schema"], "portdiff/2");

  expect_one_line_error(run_portdiff({"--repo", repo.dir(), ports.source, ports.target, "--output",
                                      repo.dir() + "/missing/dir/r.md"}),
                        "cannot write");
}

TEST(Cli, ControlBytesInPathsStayOnOneLine) {
  TempRepo repo;
  const std::string name = "odd\nname.txt";
  const Ports ports = make_ports(repo, {{name, "a\n"}}, {{name, "a\nb\n"}}, {}, {{name, "a\nc\n"}});
  for (const char* format : {"md", "text"}) {
    const CommandResult run =
        run_portdiff({"--repo", repo.dir(), ports.source, ports.target, "--format", format});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_NE(run.out.find("odd\\nname.txt"), std::string::npos) << format << "\n" << run.out;
    EXPECT_EQ(run.out.find("odd\nname.txt"), std::string::npos) << format;
  }
  // JSON keeps the path itself (JSON escapes the newline).
  const CommandResult json =
      run_portdiff({"--repo", repo.dir(), ports.source, ports.target, "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["files"][0]["path"], name);
}

}  // namespace
}  // namespace portdiff_test
