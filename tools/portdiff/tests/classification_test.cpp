// File classification on repositories the tests build, checked two ways: against
// the git-CLI oracle (git_oracle.h) for every file, and against the verdict each
// scenario was built to produce.

#include "git_oracle.h"
#include "repo_fixture.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace portdiff_test {
namespace {

using nlohmann::json;

long count_or_missing(const json& side, const char* key) {
  return side.is_null() ? -1 : side.at(key).get<long>();
}

/// Runs portdiff (JSON) on `ports`, checks every row and the totals against the
/// oracle, and returns the rows by path for scenario-specific checks.
std::map<std::string, json> check_against_oracle(const TempRepo& repo, const Ports& ports,
                                                 bool find_renames = false) {
  std::vector<std::string> args = {"--repo",     repo.dir(), ports.source,
                                   ports.target, "--format", "json"};
  if (find_renames) args.push_back("--find-renames");
  const CommandResult run = run_portdiff(args);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const json report = json::parse(run.out);
  const auto oracle = oracle_classify(repo, ports, find_renames);

  std::map<std::string, json> rows;
  for (const json& row : report.at("files")) rows[row.at("path").get<std::string>()] = row;
  EXPECT_EQ(rows.size(), oracle.size());
  std::map<std::string, std::size_t> per_class;
  for (const auto& [path, expected] : oracle) {
    SCOPED_TRACE(path);
    ++per_class[expected.verdict];
    EXPECT_EQ(rows.count(path), 1u);
    if (rows.count(path) == 0) continue;
    const json& row = rows[path];
    EXPECT_EQ(row.at("class"), expected.verdict);
    EXPECT_EQ(count_or_missing(row.at("source"), "added"), expected.source_added);
    EXPECT_EQ(count_or_missing(row.at("source"), "deleted"), expected.source_deleted);
    EXPECT_EQ(count_or_missing(row.at("target"), "added"), expected.target_added);
    EXPECT_EQ(count_or_missing(row.at("target"), "deleted"), expected.target_deleted);
    if (expected.both) {
      EXPECT_EQ(row.at("final_equal"), expected.final_equal);
    }
  }
  const json& totals = report.at("totals");
  EXPECT_EQ(totals.at("files"), oracle.size());
  EXPECT_EQ(totals.at("identical"), per_class["identical"]);
  EXPECT_EQ(totals.at("different"), per_class["different"]);
  EXPECT_EQ(totals.at("only_source"), per_class["only-source"]);
  EXPECT_EQ(totals.at("only_target"), per_class["only-target"]);
  return rows;
}

TEST(Classification, IdenticalChangeOnDifferentBaselines) {
  TempRepo repo;
  const Ports ports =
      make_ports(repo, {{"a.py", "import os\n\nvalue = 1\n"}, {"b.py", "x = 1\n"}},
                 {{"a.py", "import os\nimport sys\n\nvalue = 1\n"}, {"b.py", "x = 1\ny = 2\n"}},
                 {{"a.py", "import os\n\nvalue = 2\n"}},
                 {{"a.py", "import os\nimport sys\n\nvalue = 2\n"}, {"b.py", "x = 1\ny = 2\n"}});
  auto rows = check_against_oracle(repo, ports);
  EXPECT_EQ(rows["a.py"]["class"], "identical");
  EXPECT_EQ(rows["a.py"]["final_equal"], false);  // same hunk, different baseline
  EXPECT_EQ(rows["b.py"]["class"], "identical");
  EXPECT_EQ(rows["b.py"]["final_equal"], true);
}

TEST(Classification, DifferenceOnlyInFinalNewline) {
  TempRepo repo;
  const Ports ports = make_ports(repo, {{"a.txt", "one\n"}, {"b.txt", "one"}},
                                 {{"a.txt", "one\ntwo"}, {"b.txt", "one\ntwo\n"}}, {},
                                 {{"a.txt", "one\ntwo\n"}, {"b.txt", "one\ntwo\n"}});
  auto rows = check_against_oracle(repo, ports);
  EXPECT_EQ(rows["a.txt"]["class"], "different");
  EXPECT_EQ(rows["a.txt"]["difference"], "final-newline");
  EXPECT_EQ(rows["b.txt"]["class"], "identical");  // both replace "one" (no newline)
}

TEST(Classification, DifferenceOnlyInTrailingWhitespace) {
  TempRepo repo;
  const Ports ports = make_ports(repo, {{"a.c", "int a;\n"}}, {{"a.c", "int a;\nint b;  \n"}}, {},
                                 {{"a.c", "int a;\nint b;\n"}});
  auto rows = check_against_oracle(repo, ports);
  EXPECT_EQ(rows["a.c"]["class"], "different");
  EXPECT_EQ(rows["a.c"]["difference"], "trailing-whitespace");
}

TEST(Classification, CrlfVersusLf) {
  TempRepo repo;
  const Ports ports = make_ports(repo, {{"a.txt", "keep\r\n"}, {"b.txt", "keep\r\n"}},
                                 {{"a.txt", "keep\r\nnew\r\n"}, {"b.txt", "keep\r\nnew\r\n"}}, {},
                                 {{"a.txt", "keep\r\nnew\n"}, {"b.txt", "keep\r\nnew\r\n"}});
  auto rows = check_against_oracle(repo, ports);
  EXPECT_EQ(rows["a.txt"]["class"], "different");
  EXPECT_EQ(rows["a.txt"]["difference"], "line-endings");
  EXPECT_EQ(rows["b.txt"]["class"], "identical");
}

TEST(Classification, OnlySourceAndOnlyTarget) {
  TempRepo repo;
  const Ports ports = make_ports(repo, {{"shared.txt", "s\n"}, {"old.txt", "o\n"}},
                                 {{"shared.txt", "s\nt\n"}, {"src_only.txt", "n\n"}}, {},
                                 {{"shared.txt", "s\nt\n"}, {"old.txt", std::nullopt}});
  auto rows = check_against_oracle(repo, ports);
  EXPECT_EQ(rows["src_only.txt"]["class"], "only-source");
  EXPECT_EQ(rows["src_only.txt"]["source"]["status"], "added");
  EXPECT_EQ(rows["old.txt"]["class"], "only-target");
  EXPECT_EQ(rows["old.txt"]["target"]["status"], "deleted");
  EXPECT_EQ(rows["old.txt"]["target"]["deleted"], 1);
}

TEST(Classification, BinaryFiles) {
  const std::string png_a("\x89PNG\r\n\x1a\n\0\0\0\rIHDRa", 18);
  const std::string png_b("\x89PNG\r\n\x1a\n\0\0\0\rIHDRb", 18);
  const std::string png_c("\x89PNG\r\n\x1a\n\0\0\0\rIHDRc", 18);
  TempRepo repo;
  const Ports ports = make_ports(repo, {{"same.png", png_a}, {"diff.png", png_a}},
                                 {{"same.png", png_b}, {"diff.png", png_b}}, {},
                                 {{"same.png", png_b}, {"diff.png", png_c}});
  auto rows = check_against_oracle(repo, ports);
  EXPECT_EQ(rows["same.png"]["class"], "identical");
  EXPECT_EQ(rows["same.png"]["source"]["binary"], true);
  EXPECT_EQ(rows["diff.png"]["class"], "different");
  EXPECT_EQ(rows["diff.png"]["difference"], "binary");
}

TEST(Classification, RenameIsDeletePlusAddByDefault) {
  const std::string text = "alpha\nbeta\ngamma\ndelta\n";
  TempRepo repo;
  const Ports ports = make_ports(repo, {{"old_name.txt", text}},
                                 {{"old_name.txt", std::nullopt}, {"new_name.txt", text}}, {},
                                 {{"old_name.txt", std::nullopt}, {"new_name.txt", text}});
  auto rows = check_against_oracle(repo, ports);
  EXPECT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows["old_name.txt"]["source"]["status"], "deleted");
  EXPECT_EQ(rows["old_name.txt"]["source"]["deleted"], 4);
  EXPECT_EQ(rows["new_name.txt"]["source"]["status"], "added");
  EXPECT_EQ(rows["new_name.txt"]["class"], "identical");
}

TEST(Classification, FindRenamesPairsThem) {
  const std::string text = "alpha\nbeta\ngamma\ndelta\n";
  TempRepo repo;
  const Ports ports = make_ports(
      repo, {{"old_name.txt", text}, {"moved.txt", text + "epsilon\n"}},
      {{"old_name.txt", std::nullopt},
       {"new_name.txt", text},
       {"moved.txt", std::nullopt},
       {"moved_here.txt", text + "epsilon\n"}},
      {}, {{"old_name.txt", std::nullopt}, {"new_name.txt", text}, {"moved.txt", text + "zeta\n"}});
  auto rows = check_against_oracle(repo, ports, /*find_renames=*/true);
  EXPECT_EQ(rows["new_name.txt"]["class"], "identical");
  EXPECT_EQ(rows["new_name.txt"]["source"]["status"], "renamed");
  EXPECT_EQ(rows["new_name.txt"]["source"]["old_path"], "old_name.txt");
  EXPECT_EQ(rows["new_name.txt"]["source"]["added"], 0);
  EXPECT_EQ(rows.count("old_name.txt"), 0u);
  // Renamed on one side, edited in place on the other: two unrelated rows.
  EXPECT_EQ(rows["moved_here.txt"]["class"], "only-source");
  EXPECT_EQ(rows["moved.txt"]["class"], "only-target");
}

TEST(Classification, ModeOnlyChange) {
  TempRepo repo;
  repo.apply({{"run.sh", "echo hi\n"}, {"tool.sh", "echo t\n"}, {"lib.sh", "x=1\n"}});
  const std::string base = repo.commit("base");
  repo.git("checkout -q -b source " + base);
  repo.set_executable("run.sh", true);
  repo.set_executable("tool.sh", true);
  repo.apply({{"lib.sh", "x=1\ny=2\n"}});
  repo.set_executable("lib.sh", true);
  const std::string source_head = repo.commit("source");
  repo.git("checkout -q -b target " + base);
  repo.set_executable("run.sh", true);
  repo.apply({{"lib.sh", "x=1\ny=2\n"}});
  const std::string target_head = repo.commit("target");
  const Ports ports{base + ".." + source_head, base + ".." + target_head};

  auto rows = check_against_oracle(repo, ports);
  EXPECT_EQ(rows["run.sh"]["class"], "identical");
  EXPECT_EQ(rows["run.sh"]["source"]["new_mode"], "100755");
  EXPECT_EQ(rows["run.sh"]["source"]["added"], 0);
  EXPECT_EQ(rows["tool.sh"]["class"], "only-source");
  EXPECT_EQ(rows["lib.sh"]["class"], "different");  // same lines, one side also chmods
  EXPECT_EQ(rows["lib.sh"]["difference"], "mode");
}

TEST(Classification, LinesThatLookLikeDiffHeaders) {
  TempRepo repo;
  const std::string base = "-- comment\n--- a/x\nkeep\n";
  const Ports ports =
      make_ports(repo, {{"same.sql", base}, {"diff.sql", base}},
                 {{"same.sql", "keep\n++i;\n+++ b/y\n"}, {"diff.sql", "keep\n++i;\n+++ b/y\n"}}, {},
                 {{"same.sql", "keep\n++i;\n+++ b/y\n"}, {"diff.sql", "keep\n++j;\n+++ b/y\n"}});
  auto rows = check_against_oracle(repo, ports);
  EXPECT_EQ(rows["same.sql"]["class"], "identical");
  EXPECT_EQ(rows["same.sql"]["source"]["deleted"], 2);
  EXPECT_EQ(rows["same.sql"]["source"]["added"], 2);
  EXPECT_EQ(rows["diff.sql"]["class"], "different");
  EXPECT_EQ(rows["diff.sql"]["difference"], "lines");
}

TEST(Classification, NonUtf8Bytes) {
  TempRepo repo;
  const Ports ports = make_ports(
      repo, {{"latin1.txt", "caf\xe9\n"}, {"mixed.txt", "x\n"}},
      {{"latin1.txt", "caf\xe9\n\xff\xfe na\xefve\n"}, {"mixed.txt", "x\ncaf\xe9\n"}}, {},
      {{"latin1.txt", "caf\xe9\n\xff\xfe na\xefve\n"}, {"mixed.txt", "x\ncaf\xc3\xa9\n"}});
  auto rows = check_against_oracle(repo, ports);
  EXPECT_EQ(rows["latin1.txt"]["class"], "identical");
  EXPECT_EQ(rows["mixed.txt"]["class"], "different");
}

TEST(Classification, EmptyPatchOnOneSide) {
  TempRepo repo;
  const Ports ports = make_ports(repo, {{"a.txt", "a\n"}}, {}, {}, {{"a.txt", "a\nb\n"}});
  auto rows = check_against_oracle(repo, ports);
  EXPECT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows["a.txt"]["class"], "only-target");
}

TEST(Classification, ManyFilesMixed) {
  // A broader sweep: every verdict at once, checked only against the oracle.
  TempRepo repo;
  Edit base, source, baseline, target;
  for (int i = 0; i < 40; ++i) {
    const std::string name = "f" + std::to_string(i) + ".txt";
    base[name] = "line " + std::to_string(i) + "\ncommon\n";
    if (i % 2 == 0) source[name] = "line " + std::to_string(i) + "\ncommon\nadded\n";
    if (i % 3 == 0) target[name] = "line " + std::to_string(i) + "\ncommon\nadded\n";
    if (i % 5 == 0) target[name] = "line " + std::to_string(i) + "\ncommon\nadded \n";
    if (i % 7 == 0) baseline[name] = "LINE " + std::to_string(i) + "\ncommon\n";
  }
  const Ports ports = make_ports(repo, base, source, baseline, target);
  check_against_oracle(repo, ports);
}

TEST(Classification, P1TypeChangesComparedByContent) {
  namespace fs = std::filesystem;
  TempRepo repo;
  const fs::path dir = repo.dir();
  const auto link = [&](const std::string& target, const std::string& path) {
    fs::remove(dir / path);
    fs::create_symlink(target, dir / path);
  };
  repo.apply({{"f2l", "content\n"}, {"same", "x\n"}});
  link("somewhere", "l2f");
  const std::string base = repo.commit("base");

  repo.git("checkout -q -b source " + base);
  link("target-A", "f2l");
  fs::remove(dir / "l2f");
  repo.apply({{"l2f", "content A\n"}});
  link("same-target", "same");
  const std::string source_head = repo.commit("source");

  repo.git("checkout -q -b target " + base);
  link("target-B", "f2l");
  fs::remove(dir / "l2f");
  repo.apply({{"l2f", "content B\nmore\n"}});
  link("same-target", "same");
  const std::string target_head = repo.commit("target");

  const Ports ports{base + ".." + source_head, base + ".." + target_head};
  auto rows = check_against_oracle(repo, ports);
  EXPECT_EQ(rows["f2l"]["class"], "different");
  EXPECT_EQ(rows["f2l"]["source"]["status"], "typechange");
  EXPECT_EQ(rows["f2l"]["source"]["added"], 1);  // the link target is a line
  EXPECT_EQ(rows["l2f"]["class"], "different");
  EXPECT_EQ(rows["same"]["class"], "identical");
}

TEST(Classification, P1FileToSubmoduleComparedByCommitLine) {
  TempRepo repo;
  repo.apply({{"sub", "text\n"}, {"same", "text\n"}});
  const std::string base = repo.commit("base");
  const auto to_gitlink = [&](const std::string& path, const std::string& commit) {
    repo.git("rm -q --cached " + path);
    repo.git("update-index --add --cacheinfo 160000," + commit + "," + path);
  };
  const auto commit_index = [&](const std::string& message) {
    repo.git("commit -q -m " + message);
    std::string sha = repo.git("rev-parse HEAD");
    sha.pop_back();
    return sha;
  };
  repo.git("checkout -q -b source " + base);
  to_gitlink("sub", base);
  to_gitlink("same", base);
  const std::string source_head = commit_index("source");
  repo.git("checkout -q -f -b target " + base);
  to_gitlink("sub", source_head);
  to_gitlink("same", base);
  const std::string target_head = commit_index("target");

  const Ports ports{base + ".." + source_head, base + ".." + target_head};
  auto rows = check_against_oracle(repo, ports);
  EXPECT_EQ(rows["sub"]["class"], "different");
  EXPECT_EQ(rows["same"]["class"], "identical");
  EXPECT_EQ(rows["same"]["source"]["new_mode"], "160000");
}

}  // namespace
}  // namespace portdiff_test
