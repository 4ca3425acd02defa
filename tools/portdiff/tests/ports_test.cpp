// Many ports at once: the matrix (`portdiff SOURCE T1 T2 T3`) and `portdiff find`,
// on a generated repository with three release branches — a clean cherry-pick,
// a port with a hand-resolved conflict, and a branch without the port.

#include "git_handle.h"
#include "git_oracle.h"
#include "pipeline.h"
#include "repo_fixture.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace portdiff_test {
namespace {

using nlohmann::json;

struct Releases final {
  std::string fix;                  // the original commit, on main
  std::string port1, port2, other;  // heads of release-1, release-2 and release-3
};

std::string head(const TempRepo& repo) {
  std::string sha = repo.git("rev-parse HEAD");
  sha.pop_back();
  return sha;
}

Releases make_releases(const TempRepo& repo) {
  repo.apply({{"src/loader.py",
               "import os\n\nTIMEOUT = 10\n\n\ndef load(name):\n"
               "    return open(name).read()\n"},
              {"src/config.py", "DEBUG = False\n"}});
  repo.commit("base");
  for (const char* branch : {"release-1", "release-2", "release-3"})
    repo.git(std::string("branch ") + branch);
  repo.git("checkout -q release-1");
  repo.apply({{"CHANGES", "release 1\n"}});
  repo.commit("release-1: changelog");
  repo.git("checkout -q release-2");
  repo.apply({{"src/loader.py",
               "import os\n\nTIMEOUT = 30\n\n\ndef load(name):\n"
               "    return open(name).read()\n"}});
  repo.commit("release-2: longer timeout");
  repo.git("checkout -q release-3");
  repo.apply({{"src/config.py", "DEBUG = False\nVERBOSE = False\n"}});
  Releases r;
  r.other = repo.commit("release-3: verbose flag");

  repo.git("checkout -q main");
  repo.apply({{"src/loader.py",
               "import os\n\nTIMEOUT = 20\n\n\ndef load(name):\n"
               "    with open(name) as f:\n        return f.read()\n"},
              {"src/config.py", "DEBUG = False\nLAZY = True\n"}});
  r.fix = repo.commit("loader: close files, lazy config");

  repo.git("checkout -q release-1");
  repo.git("cherry-pick " + r.fix);
  r.port1 = head(repo);
  repo.git("checkout -q release-2");
  const CommandResult conflict =
      run_command("cd " + shell_quote(repo.dir()) + " && git cherry-pick -x " + r.fix);
  EXPECT_NE(conflict.exit_code, 0) << "expected a conflict on release-2";
  repo.apply({{"src/loader.py",
               "import os\n\nTIMEOUT = 30\n\n\ndef load(name):\n"
               "    with open(name) as f:\n        return f.read()\n"}});
  repo.git("add src/loader.py");
  repo.git("-c core.editor=true cherry-pick --continue");
  r.port2 = head(repo);
  return r;
}

std::string range_of(const std::string& commit) { return commit + "~1.." + commit; }

std::string patch_id(const TempRepo& repo, const std::string& commit) {
  const CommandResult run = run_command("cd " + shell_quote(repo.dir()) + " && git show " + commit +
                                        " | git patch-id --stable");
  return run.out.substr(0, 40);
}

TEST(Ports, MatrixCarriesEveryPairAndAgreesWithGit) {
  TempRepo repo;
  const Releases r = make_releases(repo);
  const std::vector<std::string> targets = {range_of(r.port1), range_of(r.port2),
                                            range_of(r.other)};
  std::vector<std::string> args = {"--repo", repo.dir(), range_of(r.fix)};
  args.insert(args.end(), targets.begin(), targets.end());
  args.insert(args.end(), {"--format", "json"});
  const CommandResult run = run_portdiff(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json matrix = json::parse(run.out);
  EXPECT_EQ(matrix["schema"], "portdiff-matrix/1");
  ASSERT_EQ(matrix["pairs"].size(), 3u);

  for (std::size_t t = 0; t < targets.size(); ++t) {
    SCOPED_TRACE(targets[t]);
    // Each pair of the matrix is the pair report of `portdiff SOURCE TARGET`.
    const CommandResult pair =
        run_portdiff({"--repo", repo.dir(), range_of(r.fix), targets[t], "--format", "json"});
    ASSERT_EQ(pair.exit_code, 0) << pair.err;
    EXPECT_EQ(matrix["pairs"][t], json::parse(pair.out));
    // ... and agrees with git on every file.
    const auto oracle = oracle_classify(repo, {range_of(r.fix), targets[t]}, false);
    for (const json& row : matrix["files"]) {
      const std::string path = row["path"];
      const json& cell = row["cells"][t];
      if (oracle.count(path) == 0) {
        EXPECT_TRUE(cell.is_null()) << path;
        continue;
      }
      EXPECT_EQ(cell["class"], oracle.at(path).verdict) << path;
    }
  }
  // The three kinds of port, as built.
  const auto cell = [&](const std::string& path, std::size_t t) {
    for (const json& row : matrix["files"])
      if (row["path"] == path) return row["cells"][t];
    return json();
  };
  EXPECT_EQ(cell("src/loader.py", 0)["class"], "identical");
  EXPECT_EQ(cell("src/loader.py", 1)["class"], "different");
  EXPECT_EQ(cell("src/loader.py", 2)["class"], "only-source");
  EXPECT_EQ(cell("src/config.py", 2)["class"], "different");

  // Markdown: the pair report's sections, one column per target, then what differs.
  args.resize(args.size() - 2);
  const CommandResult md = run_portdiff(args);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  // Columns are named after the branches at the heads (the source's is main).
  EXPECT_NE(md.out.find("| file | main +/- | `release-1` | `release-2` | `release-3` |"),
            std::string::npos)
      << md.out;
  EXPECT_NE(md.out.find("| `src/loader.py` | +3/-2 | identical +3/-2 | different (lines) +2/-1 | "
                        "only-source |"),
            std::string::npos)
      << md.out;
  for (const char* heading :
       {"## 1. Purpose", "## 2. Rules", "## 3. Totals", "### 3.2 Differences"})
    EXPECT_NE(md.out.find(heading), std::string::npos) << heading;
  args.push_back("--check");
  EXPECT_EQ(run_portdiff(args).exit_code, 1);
}

TEST(Ports, FindByTrailerOrStablePatchId) {
  TempRepo repo;
  const Releases r = make_releases(repo);
  // git's answers: release-1's port has the fix's stable patch-id, release-2's does
  // not (its conflict was resolved by hand) but names the fix in its trailer.
  ASSERT_EQ(patch_id(repo, r.port1), patch_id(repo, r.fix));
  ASSERT_NE(patch_id(repo, r.port2), patch_id(repo, r.fix));
  ASSERT_NE(
      repo.git("log -1 --format=%B " + r.port2).find("(cherry picked from commit " + r.fix + ")"),
      std::string::npos);

  const CommandResult run = run_portdiff(
      {"--repo", repo.dir(), "find", r.fix, "--branches", "release-*", "--format", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json found = json::parse(run.out);
  EXPECT_EQ(found["commit"], r.fix);
  EXPECT_EQ(found["patch_id"], patch_id(repo, r.fix));
  ASSERT_EQ(found["branches"].size(), 3u);
  EXPECT_EQ(found["branches"][0]["branch"], "release-1");
  EXPECT_EQ(found["branches"][0]["ports"],
            json::parse("[{\"commit\": \"" + r.port1 +
                        "\", \"found_by\": [\"patch-id\", \"changed-lines\", \"same-subject\"], "
                        "\"hint\": false, \"unresolved_marks\": []}]"));
  EXPECT_EQ(found["branches"][1]["ports"],
            json::parse("[{\"commit\": \"" + r.port2 +
                        "\", \"found_by\": [\"cherry-pick-trailer\", \"same-subject\"], \"hint\": "
                        "false, \"unresolved_marks\": []}]"));
  EXPECT_EQ(found["branches"][2]["ports"], json::array());
  EXPECT_FALSE(found.contains("report"));

  // --report compares the fix with every port found: a matrix of two targets.
  const CommandResult report = run_portdiff({"--repo", repo.dir(), "find", r.fix, "--branches",
                                             "release-*", "--report", "--format", "json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const json matrix = json::parse(report.out)["report"];
  EXPECT_EQ(matrix["schema"], "portdiff-matrix/1");
  ASSERT_EQ(matrix["targets"].size(), 2u);
  EXPECT_EQ(matrix["targets"][0]["label"], "release-1");
  EXPECT_EQ(matrix["targets"][0]["identical"], true);
  EXPECT_EQ(matrix["targets"][1]["label"], "release-2");
  EXPECT_EQ(matrix["targets"][1]["identical"], false);

  const CommandResult none =
      run_portdiff({"--repo", repo.dir(), "find", r.fix, "--branches", "nosuch-*"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no branch (local or remote-tracking) matches --branches 'nosuch-*'"),
            std::string::npos)
      << none.err;
  const CommandResult no_port =
      run_portdiff({"--repo", repo.dir(), "find", r.fix, "--branches", "release-3", "--report"});
  EXPECT_EQ(no_port.exit_code, 2);
  EXPECT_NE(no_port.err.find("nothing to compare"), std::string::npos) << no_port.err;
}

/// `git rev-parse SPEC`, without its newline.
// The find stage's product, before any rendering: every field against git.
TEST(Ports, FindReportDataAgreesWithGit) {
  TempRepo repo;
  const Releases r = make_releases(repo);
  portdiff::LibGit2 libgit2;
  portdiff::Options options;
  options.repo = repo.dir();
  options.find = true;
  options.find_commit = "main";
  options.branch_globs = {"release-*"};

  const portdiff::FindReport listing = portdiff::build_find_report(options);
  EXPECT_EQ(portdiff::to_hex(listing.found.commit), r.fix);
  EXPECT_EQ(portdiff::to_hex(listing.found.patch_id), patch_id(repo, r.fix));
  EXPECT_EQ(listing.found.subject + "\n", repo.git("log -1 --format=%s " + r.fix));
  EXPECT_EQ(listing.found.parents, 1u);
  EXPECT_TRUE(listing.reports.empty());
  // git: no release branch contains the fix; the ports are the branches' tips.
  ASSERT_EQ(repo.git("branch --list 'release-*' --contains " + r.fix), "");
  const std::string trailer = "(cherry picked from commit " + r.fix + ")";
  const std::vector<std::string> tips = {r.port1, r.port2, r.other};
  ASSERT_EQ(listing.found.branches.size(), 3u);
  for (std::size_t b = 0; b < 3; ++b) {
    const portdiff::BranchPorts& branch = listing.found.branches[b];
    EXPECT_EQ(branch.branch, "release-" + std::to_string(b + 1));
    EXPECT_EQ(repo.rev(branch.branch), tips[b]);
    EXPECT_FALSE(branch.contains_commit) << branch.branch;
    EXPECT_TRUE(branch.inherited.empty()) << branch.branch;
    if (b == 2) {
      EXPECT_TRUE(branch.ports.empty());
      continue;
    }
    ASSERT_EQ(branch.ports.size(), 1u) << branch.branch;
    const portdiff::Port& port = branch.ports.front();
    EXPECT_EQ(portdiff::to_hex(port.commit), tips[b]);
    EXPECT_EQ(port.by_patch_id, patch_id(repo, tips[b]) == patch_id(repo, r.fix)) << branch.branch;
    EXPECT_EQ(port.marks == static_cast<unsigned>(portdiff::MarkKind::cherry_pick),
              repo.git("log -1 --format=%B " + tips[b]).find(trailer) != std::string::npos)
        << branch.branch;
    EXPECT_TRUE(port.by_subject) << branch.branch;
  }

  // --report: one pair per port, in branch order, pinned to git's commits.
  options.find_report = true;
  const portdiff::FindReport compared = portdiff::build_find_report(options);
  ASSERT_EQ(compared.reports.size(), 2u);
  for (std::size_t t = 0; t < 2; ++t) {
    const portdiff::Report& pair = compared.reports[t];
    EXPECT_EQ(portdiff::to_hex(pair.source.base), repo.rev(r.fix + "~1"));
    EXPECT_EQ(portdiff::to_hex(pair.source.head), r.fix);
    EXPECT_EQ(portdiff::to_hex(pair.target.base), repo.rev(tips[t] + "~1"));
    EXPECT_EQ(portdiff::to_hex(pair.target.head), tips[t]);
    EXPECT_EQ(pair.target.label, "release-" + std::to_string(t + 1));
  }
  EXPECT_TRUE(portdiff::all_identical(compared.reports[0]));
  EXPECT_FALSE(portdiff::all_identical(compared.reports[1]));
}

/// The block of README.md between `<!-- NAME -->` and `<!-- /NAME -->`, inside its fence.
std::string readme_block(const std::string& name) {
  std::ifstream in(std::string(PORTDIFF_SOURCE_DIR) + "/README.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  const std::size_t begin = all.find("<!-- " + name + " -->");
  const std::size_t end = all.find("<!-- /" + name + " -->");
  if (begin == std::string::npos || end == std::string::npos) return "";
  const std::string block = all.substr(begin, end - begin);
  const std::size_t open = block.find("```");
  if (open == std::string::npos) return "";
  const std::string fence = block.substr(open, block.find_first_not_of('`', open) - open);
  const std::size_t body = block.find('\n', open) + 1;
  const std::size_t close = block.rfind("\n" + fence);
  if (close == std::string::npos || close < body) return "";
  return block.substr(body, close + 1 - body);
}

TEST(Ports, ReadmeExampleIsWhatPortdiffPrints) {
  const std::string expected = readme_block("find-example");
  ASSERT_FALSE(expected.empty()) << "README.md has no find-example block";
  const CommandResult run =
      run_command(shell_quote(std::string(PORTDIFF_SOURCE_DIR) + "/example_ports.sh") + " " +
                  shell_quote(PORTDIFF_EXE) + " --branches 'release-*' --report --format text");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, expected);
}

TEST(Ports, ReadmePairExampleIsWhatPortdiffPrints) {
  const std::string expected = readme_block("pair-example");
  ASSERT_FALSE(expected.empty()) << "README.md has no pair-example block";
  const CommandResult run =
      run_command(shell_quote(std::string(PORTDIFF_SOURCE_DIR) + "/example.sh") + " " +
                  shell_quote(PORTDIFF_EXE));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, expected);
}

TEST(Ports, ReadmeAuditExampleIsWhatPortdiffPrints) {
  const std::string expected = readme_block("audit-example");
  ASSERT_FALSE(expected.empty()) << "README.md has no audit-example block";
  const CommandResult run =
      run_command(shell_quote(std::string(PORTDIFF_SOURCE_DIR) + "/example_audit.sh") + " " +
                  shell_quote(PORTDIFF_EXE) + " --format text");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, expected);
}

}  // namespace
}  // namespace portdiff_test
