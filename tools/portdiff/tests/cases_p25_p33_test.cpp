// Round-four cases (P25–P33) of tests/cases/README.md, each against git's own answer.

#include "git_oracle.h"
#include "repo_fixture.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace portdiff_test {
namespace {

using nlohmann::json;

json find_report(const TempRepo& repo, const std::string& commit) {
  const CommandResult run = run_portdiff({"--repo", repo.dir(), "find", commit, "--branches",
                                          "release-*", "--report", "--format", "json"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return json::parse(run.out);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// git's pipeline: the commits of `revs` whose `git show` has `commit`'s
/// `git patch-id --stable`.
std::set<std::string> git_patch_id_matches(const TempRepo& repo, const std::string& commit,
                                           const std::string& revs) {
  const std::string cd = "cd " + shell_quote(repo.dir()) + " && ";
  const std::string id =
      run_command(cd + "git show " + commit + " | git patch-id --stable").out.substr(0, 40);
  const CommandResult all =
      run_command(cd + "git log -p --format='commit %H' " + revs + " | git patch-id --stable");
  std::set<std::string> matches;
  for (const std::string& line : lines_of(all.out))
    if (line.substr(0, 40) == id) matches.insert(line.substr(41, 40));
  return matches;
}

json report_json(const TempRepo& repo, std::vector<std::string> args) {
  args.insert(args.begin(), {"--repo", repo.dir()});
  args.insert(args.end(), {"--format", "json"});
  const CommandResult run = run_portdiff(args);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return json::parse(run.out);
}

const json& row_of(const json& report, const std::string& path) {
  for (const json& row : report["files"])
    if (row["path"] == path) return row;
  static const json none;
  ADD_FAILURE() << "no row " << path;
  return none;
}

/// The head of a range `BASE..HEAD`.
std::string head_of(const std::string& range) { return range.substr(range.find("..") + 2); }

const json& branch_named(const json& found, const std::string& name) {
  for (const json& branch : found["branches"])
    if (branch["branch"] == name) return branch;
  static const json none;
  ADD_FAILURE() << "no branch " << name;
  return none;
}

// P25: a branch that contains the commit is not offered a same-subject commit
// (a recurring "Update changelog") as its port, and --report compares only real
// ports.
TEST(CasesP25toP33, P25ABranchThatContainsTheCommitHasNoPortToCompare) {
  TempRepo repo;
  repo.apply({{"CHANGES", "v1\n"}, {"f.py", "a\n"}});
  repo.commit("base");
  repo.git("branch release-1");
  repo.apply({{"CHANGES", "v1\nfix\n"}});
  const std::string fix = repo.commit("Update changelog");
  repo.git("branch release-2");
  repo.git("checkout -q release-2");
  repo.apply({{"CHANGES", "v1\nfix\nv2\n"}});
  repo.commit("Update changelog");  // the same subject, another change
  repo.git("checkout -q release-1");
  repo.git("cherry-pick -x " + fix);
  const std::string port = repo.git("rev-parse HEAD").substr(0, 40);
  EXPECT_EQ(repo.git("branch --contains " + fix +
                     " --format='%(refname:short)' --list "
                     "'release-*'"),
            "release-2\n");  // git's answer: release-2 needs no port

  const json found = find_report(repo, fix);
  EXPECT_EQ(branch_named(found, "release-2")["contains_commit"], true);
  EXPECT_EQ(branch_named(found, "release-2")["ports"], json::array());
  EXPECT_EQ(branch_named(found, "release-1")["ports"][0]["commit"], port);
  // One port: a pair report of the commit against it, not a matrix with release-2.
  EXPECT_FALSE(found["report"].contains("targets")) << found["report"].dump();
  EXPECT_EQ(found["report"]["target"]["head"], port) << found["report"].dump();
}

// P26: in a shallow clone `find` searches the history that is there, the port
// git's own patch-id pipeline finds there included, and says where each branch's
// history ends (exit 3: the search was cut short).
TEST(CasesP25toP33, P26FindInAShallowCloneSearchesWhatIsThere) {
  TempRepo origin;
  origin.apply({{"f.py", "a\n"}});
  origin.commit("base");
  origin.git("branch release-1");
  origin.git("branch release-2");
  for (int i = 1; i <= 3; ++i) {
    origin.apply({{"m" + std::to_string(i), "m\n"}});
    origin.commit("main " + std::to_string(i));
  }
  origin.apply({{"f.py", "a\nfix\n"}});
  const std::string fix = origin.commit("fix");
  origin.git("checkout -q release-1");
  origin.apply({{"r1", "r\n"}});
  origin.commit("release-1 moves on");
  origin.git("cherry-pick " + fix);  // no -x: found by its patch-id
  origin.git("checkout -q release-2");
  for (int i = 1; i <= 4; ++i) {
    origin.apply({{"r2", std::to_string(i) + "\n"}});
    origin.commit("release-2 " + std::to_string(i));
  }
  TempRepo clone;
  std::filesystem::remove_all(clone.dir());
  const CommandResult cloned = run_command("git clone -q --depth 2 --no-single-branch file://" +
                                           origin.dir() + " " + shell_quote(clone.dir()));
  ASSERT_EQ(cloned.exit_code, 0) << cloned.err;
  ASSERT_EQ(clone.git("rev-parse --is-shallow-repository"), "true\n");

  // git's answers: the port its pipeline finds within the clone, and where each
  // branch's history ends (the commits of .git/shallow that the branch reaches).
  const std::set<std::string> git_ports =
      git_patch_id_matches(clone, fix, "origin/release-1 origin/release-2 ^" + fix);
  ASSERT_EQ(git_ports.size(), 1U);
  const std::vector<std::string> shallow =
      lines_of(run_command("cd " + shell_quote(clone.dir()) +
                           " && cat \"$(git rev-parse --git-path shallow)\"")
                   .out);
  const auto ends_of = [&](const std::string& branch) {
    const std::vector<std::string> reached = lines_of(clone.git("rev-list " + branch));
    json ends = json::array();
    for (const std::string& end : shallow)
      if (std::find(reached.begin(), reached.end(), end) != reached.end()) ends.push_back(end);
    return ends;
  };

  const CommandResult run = run_portdiff({"--repo", clone.dir(), "find", fix, "--branches",
                                          "origin/release-*", "--report", "--format", "json"});
  ASSERT_EQ(run.exit_code, 3) << run.err;
  const json found = json::parse(run.out);
  EXPECT_EQ(found["complete"], false);
  const json& release_1 = branch_named(found, "origin/release-1");
  ASSERT_EQ(release_1["ports"].size(), 1U) << found.dump();
  EXPECT_EQ(release_1["ports"][0]["commit"], *git_ports.begin());
  EXPECT_EQ(release_1["history_ends"], ends_of("origin/release-1"));
  EXPECT_EQ(branch_named(found, "origin/release-2")["ports"], json::array());
  EXPECT_EQ(branch_named(found, "origin/release-2")["history_ends"], ends_of("origin/release-2"));
  EXPECT_EQ(branch_named(found, "origin/release-2")["history_ends"].size(), 1U);
  EXPECT_EQ(found["report"]["target"]["head"], *git_ports.begin());
  EXPECT_EQ(found["report"]["totals"]["identical"], 1);

  const CommandResult text = run_portdiff(
      {"--repo", clone.dir(), "find", fix, "--branches", "origin/release-*", "--format", "text"});
  EXPECT_EQ(text.exit_code, 3) << text.err;
  EXPECT_TRUE(contains(text.out, "shallow clone: the search ends at 2 boundary commits"))
      << text.out;
  const std::string release_2_end =
      branch_named(found, "origin/release-2")["history_ends"][0].get<std::string>();
  EXPECT_TRUE(contains(text.out, "origin/release-2  no port\norigin/release-2  history ends at " +
                                     release_2_end.substr(0, 12) +
                                     " (shallow clone)  older commits not searched"))
      << text.out;

  // A commit whose parent lies past the boundary has no patch to search for.
  const std::string main_end = ends_of(fix)[0].get<std::string>();
  const CommandResult at_end =
      run_portdiff({"--repo", clone.dir(), "find", main_end, "--branches", "origin/release-*"});
  EXPECT_EQ(at_end.exit_code, 2);
  EXPECT_TRUE(contains(at_end.err, "shallow boundary")) << at_end.err;
}

// P27: two moved files of the same name and similar changes pair with the partner
// whose path agrees most — the pairing git's rename detection makes between the
// two heads — not with the one whose changed lines happen to be closer.
TEST(CasesP25toP33, P27AMovedFilePairsWithThePartnerWhosePathAgreesMost) {
  TempRepo repo;
  const auto body = [](const std::string& name) {
    std::string text = "namespace: ns\nname: " + name + "\n";
    for (int i = 0; i < 10; ++i) text += name + " line " + std::to_string(i) + "\n";
    return text;
  };
  const std::string col = body("col"), failure = body("failure");
  const std::string l1 = "deps: x\n", l2 = "tags: y\n";
  // The source's col change has exactly the target's failure lines; the right
  // partners share two lines of three.
  const Ports ports =
      make_ports(repo, {{"a/ns/col/galaxy.yml", col}, {"a/ns/failure/galaxy.yml", failure}},
                 {{"a/ns/col/galaxy.yml", col + l1 + l2 + "license: z\n"},
                  {"a/ns/failure/galaxy.yml", failure + l1 + l2 + "readme: m\n"}},
                 {{"a/ns/col/galaxy.yml", std::nullopt},
                  {"a/ns/failure/galaxy.yml", std::nullopt},
                  {"b/ns/col/galaxy.yml", col},
                  {"b/ns/failure/galaxy.yml", failure}},
                 {{"b/ns/col/galaxy.yml", col + l1 + l2 + "license: z2\n"},
                  {"b/ns/failure/galaxy.yml", failure + l1 + l2 + "license: z\n"}});
  // git's answer: its rename detection between the two heads pairs each moved file.
  std::map<std::string, std::string> git_partner;  // target path -> source path
  for (const std::string& line : lines_of(repo.git(
           "diff -M --name-status " + head_of(ports.source) + " " + head_of(ports.target)))) {
    if (line[0] != 'R') continue;
    const std::size_t first = line.find('\t'), second = line.find('\t', first + 1);
    git_partner[line.substr(second + 1)] = line.substr(first + 1, second - first - 1);
  }
  ASSERT_EQ(git_partner.size(), 2U);
  const auto source = oracle_patch(repo, ports.source, false);
  const auto target = oracle_patch(repo, ports.target, false);

  const json report = report_json(repo, {ports.source, ports.target});
  EXPECT_EQ(report["totals"]["files"], 2) << report.dump();
  for (const auto& [target_path, source_path] : git_partner) {
    const json& row = row_of(report, target_path);
    EXPECT_EQ(row["pairing"], "content") << target_path;
    EXPECT_EQ(row["source_path"], source_path) << target_path;
    EXPECT_EQ(row["source"]["added"], source.at(source_path).added.size());
    EXPECT_EQ(row["target"]["added"], target.at(target_path).added.size());
    EXPECT_EQ(row["size"]["common"], 2) << row.dump();
    EXPECT_EQ(row["final_equal"], false);
  }
}

// P28: a commit whose `git show` detects a rename has the `git patch-id --stable`
// of that `git show`, so a clean cherry-pick of it is found by its patch-id.
TEST(CasesP25toP33, P28PatchIdsAgreeWithGitShowForRenames) {
  TempRepo repo;
  std::string text;
  for (int i = 0; i < 20; ++i) text += "line " + std::to_string(i) + "\n";
  // git's similarity score is hashed too: chunks of a line or of 64 bytes, CR
  // before LF skipped; files of each kind, renamed with edits of several sizes.
  std::string crlf, wide;
  for (int i = 0; i < 12; ++i) crlf += "crlf " + std::to_string(i) + "\r\n";
  for (int i = 0; i < 6; ++i) wide += std::string(150 + i, static_cast<char>('a' + i)) + "\n";
  repo.apply({{"old.py", text},
              {"moved.py", text + "tail\n"},
              {"other.py", "x\n"},
              {"crlf.txt", crlf},
              {"wide.txt", wide}});
  repo.commit("base");
  repo.git("branch release-1");
  const auto git_patch_id = [&](const std::string& commit) {
    return run_command("cd " + shell_quote(repo.dir()) + " && git show " + commit +
                       " | git patch-id --stable")
        .out.substr(0, 40);
  };
  // A rename with an edit, a pure rename and an edit in one commit; and a rename alone.
  repo.apply({{"old.py", std::nullopt},
              {"new.py", text + "added\n"},
              {"moved.py", std::nullopt},
              {"pkg/moved.py", text + "tail\n"},
              {"other.py", "x\ny\n"},
              {"crlf.txt", std::nullopt},
              {"crlf2.txt", crlf.substr(0, 60) + "new\r\n" + crlf.substr(60)},
              {"wide.txt", std::nullopt},
              {"wide2.txt", wide.substr(0, 400) + "x" + wide.substr(400)}});
  const std::string fix = repo.commit("rename and edit");
  repo.apply({{"new.py", std::nullopt}, {"newer.py", text + "added\n"}});
  const std::string rename = repo.commit("rename only");
  for (const char* rename_from : {"old.py", "crlf.txt", "wide.txt", "moved.py"})
    ASSERT_TRUE(contains(repo.git("show " + fix), std::string("rename from ") + rename_from));
  ASSERT_TRUE(contains(repo.git("show " + rename), "similarity index 100%"));
  repo.git("checkout -q release-1");
  repo.apply({{"release.txt", "1\n"}});
  repo.commit("release-1 moves on");
  repo.git("cherry-pick " + fix + " " + rename);  // no -x: only the patch-id can tell
  const std::string port_of_fix = repo.git("rev-parse HEAD~1").substr(0, 40);
  const std::string port_of_rename = repo.git("rev-parse HEAD").substr(0, 40);

  for (const auto& [commit, port] : {std::pair{fix, port_of_fix}, {rename, port_of_rename}}) {
    ASSERT_EQ(git_patch_id(commit), git_patch_id(port));  // git's answer: the same patch-id
    const CommandResult run = run_portdiff(
        {"--repo", repo.dir(), "find", commit, "--branches", "release-*", "--format", "json"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const json found = json::parse(run.out);
    EXPECT_EQ(found["patch_id"], git_patch_id(commit)) << repo.git("show " + commit);
    const json& ports = branch_named(found, "release-1")["ports"];
    ASSERT_EQ(ports.size(), 1U) << found.dump();
    EXPECT_EQ(ports[0]["commit"], port);
    EXPECT_TRUE(contains(ports[0]["found_by"].dump(), "\"patch-id\"")) << found.dump();
  }
}

// P28, every kind of change: the patch-id `find` prints is git's for each commit.
TEST(CasesP25toP33, P28PatchIdsAgreeWithGitForEveryKindOfChange) {
  TempRepo repo;
  std::string text;
  for (int i = 0; i < 30; ++i) text += "def f" + std::to_string(i) + "():\n    return 1\n\n";
  repo.apply({{"a.py", text}, {"bin.dat", std::string("\0\1\2", 3)}, {"tail", "x"}});
  std::vector<std::string> commits = {repo.commit("base")};
  const std::vector<Edit> edits = {
      {{"bin.dat", std::string("\0\1\3", 3)}},                               // binary
      {{"empty", ""}},                                                       // a new empty file
      {{"tail", "x\ny"}},                                                    // no final newline
      {{"a.py", "def g():\n    pass\n\n" + text + "def h():\n    pass\n"}},  // hunks
      {{"a.py", std::nullopt}, {"b.py", text}, {"empty", std::nullopt}, {"c", "c\n"}},
  };
  for (const Edit& edit : edits) {
    repo.apply(edit);
    commits.push_back(repo.commit("change"));
  }
  repo.set_executable("c", true);
  commits.push_back(repo.commit("mode only"));
  // A binary file moved as it is (git prints no "Binary files ... differ" for it),
  // hashed with the file after it; then its mode alone.
  repo.apply(
      {{"bin.dat", std::nullopt}, {"img/bin.dat", std::string("\0\1\3", 3)}, {"zz.txt", "z\n"}});
  commits.push_back(repo.commit("binary moved"));
  ASSERT_TRUE(contains(repo.git("show " + commits.back()), "rename from bin.dat"));
  repo.set_executable("img/bin.dat", true);
  commits.push_back(repo.commit("binary mode only"));
  for (std::size_t i = 1; i < commits.size(); ++i) {
    const std::string git_id = run_command("cd " + shell_quote(repo.dir()) + " && git show " +
                                           commits[i] + " | git patch-id --stable")
                                   .out.substr(0, 40);
    const CommandResult run = run_portdiff(
        {"--repo", repo.dir(), "find", commits[i], "--branches", "main", "--format", "json"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(json::parse(run.out)["patch_id"], git_id) << repo.git("show " + commits[i]);
  }
}

/// The peak resident memory (KiB) of one run of `argv`, standard output discarded:
/// wait4's ru_maxrss of that process alone.
long peak_rss_kib(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const pid_t child = ::fork();
  if (child == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  rusage usage{};
  EXPECT_EQ(::wait4(child, &status, 0, &usage), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << argv[0] << " " << status;
  return usage.ru_maxrss;
}

// P29: a pair report on a large file (here 16 MiB, 243,000 lines; the bench's is
// 50 MB) holds about what one `git diff -U0` of it holds: the two sides, diffed
// concurrently, must not hold both large files and both diffs at once. Its counts
// are git's; a port that differs in the file's lines is found different.
TEST(CasesP25toP33, P29APairReportOnALargeFileHoldsWhatGitHolds) {
  TempRepo repo;
  // 69-byte lines as in bench/portdiff_bench.sh --large-file: the source edits every
  // 1000th line and adds one after every 5000th; the target first drifts its
  // baseline (every 3000th line), then makes the same edit, every 7th edited line
  // differently.
  constexpr int lines = 16 * 1024 * 1024 / 69;
  const auto file = [&](bool drift, bool edit, bool differ) {
    std::string text;
    text.reserve(static_cast<std::size_t>(lines + 1) * 70);
    char line[80];
    for (int l = 1; l <= lines; ++l) {
      const char d = drift && l % 3000 == 0 ? 'D' : '-';
      const char e = edit && l % 1000 == 0 ? (differ && l % 7000 == 0 ? 'P' : 'E') : '-';
      std::snprintf(line, sizeof line,
                    "%08d %c%c ordinary generated text of the large file test ....\n", l, d, e);
      text += line;
      if (edit && l % 5000 == 0) text += "added line\n";
    }
    return text;
  };
  const Ports ports = make_ports(
      repo, {{"big.txt", file(false, false, false)}}, {{"big.txt", file(false, true, false)}},
      {{"big.txt", file(true, false, false)}}, {{"big.txt", file(true, true, true)}});
  const auto source = oracle_patch(repo, ports.source, false);
  const auto target = oracle_patch(repo, ports.target, false);

  const json report = report_json(repo, {ports.source, ports.target});
  const json& row = row_of(report, "big.txt");
  EXPECT_EQ(row["class"], "different");
  EXPECT_EQ(row["difference"], "lines");
  EXPECT_EQ(row["source"]["added"], source.at("big.txt").added.size());
  EXPECT_EQ(row["source"]["deleted"], source.at("big.txt").deleted.size());
  EXPECT_EQ(row["target"]["added"], target.at("big.txt").added.size());
  EXPECT_EQ(row["target"]["deleted"], target.at("big.txt").deleted.size());

  // git's answer: the peak memory of each of the two `git diff -U0` runs.
  const long git_peak =
      std::max(peak_rss_kib({"git", "-C", repo.dir(), "diff", "-U0", ports.source}),
               peak_rss_kib({"git", "-C", repo.dir(), "diff", "-U0", ports.target}));
  for (const char* format : {"json", "md"}) {
    const long peak = peak_rss_kib(
        {PORTDIFF_EXE, "--repo", repo.dir(), ports.source, ports.target, "--format", format});
    EXPECT_LE(peak, git_peak * 3 / 2)
        << format << ": portdiff " << peak << " KiB, git diff -U0 " << git_peak << " KiB";
  }
}

// P32: the text columns hold long paths and long labels; a label is escaped only
// in a table cell, and never empty; an empty commit has no patch-id, as in git.
TEST(CasesP25toP33, P32ColumnsLabelsAndTheEmptyCommit) {
  TempRepo repo;
  const std::string deep = "src/" + std::string(70, 'd') + "/module.py";
  const Ports ports =
      make_ports(repo, {{deep, "a\n"}, {"b.py", "b\n"}}, {{deep, "a\n1\n"}, {"b.py", "b\n2\n3\n"}},
                 {}, {{deep, "a\n1\n"}, {"b.py", "b\n2\n3\n"}});
  const std::string long_label = "release/with-a-long-name-2.9";
  const CommandResult text = run_portdiff({"--repo", repo.dir(), ports.source, ports.target,
                                           "--format", "text", "--label", long_label, "t|2"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  // git's counts, and where the heading puts each column.
  std::map<std::string, std::string> git_counts;
  for (const std::string& line : lines_of(repo.git("diff --numstat " + ports.source))) {
    std::istringstream fields(line);
    std::string added, deleted, path;
    fields >> added >> deleted >> path;
    git_counts[path] = "+" + added + "/-" + deleted;
  }
  const std::vector<std::string> lines = lines_of(text.out);
  const auto heading = std::find_if(lines.begin(), lines.end(), [](const std::string& line) {
    return line.rfind("  file", 0) == 0;
  });
  ASSERT_NE(heading, lines.end()) << text.out;
  const std::size_t source_column = heading->find(long_label);
  const std::size_t target_column = heading->find("t|2");
  ASSERT_NE(target_column, std::string::npos) << text.out;
  EXPECT_GT(target_column, source_column + long_label.size()) << text.out;
  for (const auto& [path, counts] : git_counts) {
    const auto row = std::find_if(lines.begin(), lines.end(), [&](const std::string& line) {
      return line.find(path) != std::string::npos;
    });
    ASSERT_NE(row, lines.end()) << path;
    // A path too long for its column has a line of its own; the counts follow.
    const std::string& columns = row->size() == path.size() + 2 ? *(row + 1) : *row;
    EXPECT_EQ(columns.substr(source_column, counts.size()), counts) << text.out;
    EXPECT_EQ(columns.substr(target_column, counts.size()), counts) << text.out;
  }

  const CommandResult md =
      run_portdiff({"--repo", repo.dir(), ports.source, ports.target, "--label", "s|1", "t|2"});
  EXPECT_TRUE(contains(md.out, "# Backport comparison: `s|1` vs `t|2`\n")) << md.out;
  EXPECT_TRUE(contains(md.out, "- source `s|1` (`" + ports.source + "`)")) << md.out;
  // In a table cell the pipe stays escaped: it would split the cell.
  EXPECT_TRUE(contains(md.out, "| file | s\\|1 +/- | t\\|2 +/- |")) << md.out;

  const CommandResult empty_label =
      run_portdiff({"--repo", repo.dir(), ports.source, ports.target, "--label", "", "t"});
  EXPECT_EQ(empty_label.exit_code, 2);
  EXPECT_TRUE(contains(empty_label.err, "--label: a name must not be empty")) << empty_label.err;

  // An empty commit: git patch-id prints nothing for it.
  repo.git("checkout -q source");
  const std::string empty = repo.commit("nothing");
  ASSERT_EQ(run_command("cd " + shell_quote(repo.dir()) + " && git show " + empty +
                        " | git patch-id --stable")
                .out,
            "");
  const CommandResult found = run_portdiff(
      {"--repo", repo.dir(), "find", empty, "--branches", "target", "--format", "json"});
  ASSERT_EQ(found.exit_code, 0) << found.err;
  EXPECT_EQ(json::parse(found.out)["patch_id"], nullptr);
  const CommandResult found_text = run_portdiff(
      {"--repo", repo.dir(), "find", empty, "--branches", "target", "--format", "text"});
  EXPECT_TRUE(contains(found_text.out, "patch-id  none (the commit changes nothing)\n"))
      << found_text.out;
}

// P33: a one-sided row that deletes lines says how many of them the other head
// still holds — a deletion the other branch has not made — counted here from
// `git show HEAD:path` and git's own deleted lines.
TEST(CasesP25toP33, P33DeleteOnlyRowsSayWhetherTheOtherHeadStillHoldsTheLines) {
  TempRepo repo;
  const Ports ports =
      make_ports(repo, {{"f.py", "a\nb\nc\nd\n"}, {"gone.py", "x\ny\n"}, {"keep.py", "k\n"}},
                 {{"f.py", "a\nd\n"}, {"gone.py", std::nullopt}, {"keep.py", "k\nk2\n"}},
                 {{"f.py", "a\nb\nd\n"}},  // the target's baseline already lost "c"
                 {{"keep.py", "k\nk2\n"}});
  const auto source = oracle_patch(repo, ports.source, false);
  const auto held_at_target = [&](const std::string& path) {
    const std::vector<std::string> lines =
        lines_of(repo.git("show " + head_of(ports.target) + ":" + path));
    std::multiset<std::string> there(lines.begin(), lines.end());
    std::size_t held = 0;
    for (std::string line : source.at(path).deleted) {
      line.pop_back();  // the '\n'
      const auto found = there.find(line);
      if (found == there.end()) continue;
      there.erase(found);
      ++held;
    }
    return held;
  };
  ASSERT_EQ(source.at("f.py").deleted.size(), 2U);
  ASSERT_EQ(source.at("f.py").added.size(), 0U);

  const json report = report_json(repo, {ports.source, ports.target});
  const json& f = row_of(report, "f.py");
  EXPECT_EQ(f["class"], "only-source");
  EXPECT_EQ(f["other_head"]["exists"], true);
  EXPECT_EQ(f["other_head"]["holds_deleted"], held_at_target("f.py"));
  EXPECT_EQ(f["other_head"]["holds_deleted"], 1);
  const json& gone = row_of(report, "gone.py");
  EXPECT_EQ(gone["other_head"]["holds_deleted"], held_at_target("gone.py"));
  EXPECT_EQ(gone["other_head"]["holds_deleted"], 2);

  const CommandResult md = run_portdiff({"--repo", repo.dir(), ports.source, ports.target});
  EXPECT_TRUE(contains(md.out, "exists at the target head, still holding 1 of the 2 deleted lines"))
      << md.out;
  EXPECT_TRUE(contains(md.out, "exists at the target head, still holding 2 of the 2 deleted lines"))
      << md.out;
}

// P31: a port that several branches contain is listed on the branch it was
// committed on — on that branch's first-parent line (git log --first-parent), the
// trunk (origin/HEAD) first — and a local branch and the remote-tracking branch it
// tracks, at the same commit, are one row.
TEST(CasesP25toP33, P31InheritedPortsFollowTheDirectionOfTheFix) {
  TempRepo origin;
  origin.apply({{"f.py", "f\n"}, {"h.py", "h\n"}});
  origin.commit("base");
  origin.git("branch 6.x");
  origin.git("checkout -q 6.x");
  origin.apply({{"f.py", "f\nfix\n"}});
  const std::string fix = origin.commit("fix f");
  origin.apply({{"h.py", "h\nfix\n"}});
  const std::string later_fix = origin.commit("fix h");
  origin.git("checkout -q main");
  origin.apply({{"m.py", "m\n"}});
  origin.commit("main moves on");
  origin.git("cherry-pick -x " + fix);  // made on main, before 7.0.x forks
  const std::string main_port = origin.git("rev-parse HEAD").substr(0, 40);
  origin.git("checkout -q -b 7.0.x");
  origin.git("cherry-pick -x " + later_fix);  // made on 7.0.x, merged up into main
  const std::string release_port = origin.git("rev-parse HEAD").substr(0, 40);
  origin.git("checkout -q main");
  origin.git("merge -q --no-ff -m 'merge 7.0.x' 7.0.x");

  TempRepo clone;
  clone.git("remote add origin " + shell_quote(origin.dir()));
  clone.git("fetch -q origin");
  clone.git("symbolic-ref refs/remotes/origin/HEAD refs/remotes/origin/main");
  clone.git("checkout -q -B main --track origin/main");
  // git's answers: which first-parent lines hold each port, and the trunk.
  const auto on_first_parent_line = [&](const std::string& branch, const std::string& commit) {
    return contains(clone.git("rev-list --first-parent " + branch), commit);
  };
  ASSERT_TRUE(on_first_parent_line("origin/main", main_port));
  ASSERT_TRUE(on_first_parent_line("origin/7.0.x", main_port));  // forked after it
  ASSERT_TRUE(on_first_parent_line("origin/7.0.x", release_port));
  ASSERT_FALSE(on_first_parent_line("origin/main", release_port));  // merged in
  ASSERT_EQ(clone.git("symbolic-ref --short refs/remotes/origin/HEAD"), "origin/main\n");
  ASSERT_EQ(clone.git("rev-parse --abbrev-ref main@{upstream}"), "origin/main\n");

  const auto find = [&](const std::string& commit) {
    const CommandResult run = run_portdiff({"--repo", clone.dir(), "find", commit, "--branches",
                                            "origin/*", "--branches", "main", "--format", "json"});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return json::parse(run.out);
  };
  const json first = find(fix);
  // One row for main and origin/main; origin/6.x contains the commit.
  std::vector<std::string> names;
  for (const json& branch : first["branches"]) names.push_back(branch["branch"]);
  EXPECT_EQ(names, (std::vector<std::string>{"main", "origin/6.x", "origin/7.0.x"}));
  EXPECT_EQ(branch_named(first, "main")["twins"], json::array({"origin/main"}));
  EXPECT_EQ(branch_named(first, "origin/6.x")["contains_commit"], true);
  ASSERT_EQ(branch_named(first, "main")["ports"].size(), 1U) << first.dump();
  EXPECT_EQ(branch_named(first, "main")["ports"][0]["commit"], main_port);
  EXPECT_EQ(branch_named(first, "origin/7.0.x")["inherited"],
            json::parse(R"([{"commit": ")" + main_port + R"(", "from": "main"}])"));

  const json second = find(later_fix);
  ASSERT_EQ(branch_named(second, "origin/7.0.x")["ports"].size(), 1U) << second.dump();
  EXPECT_EQ(branch_named(second, "origin/7.0.x")["ports"][0]["commit"], release_port);
  EXPECT_EQ(branch_named(second, "main")["inherited"],
            json::parse(R"([{"commit": ")" + release_port + R"(", "from": "origin/7.0.x"}])"));

  const CommandResult text = run_portdiff({"--repo", clone.dir(), "find", fix, "--branches",
                                           "origin/*", "--branches", "main", "--format", "text"});
  EXPECT_TRUE(contains(text.out, "main = origin/main  " + main_port.substr(0, 12))) << text.out;
}

/// git's places for one file of a range: each added line's number in the new file
/// and each deleted line's in the old one, read from `git diff -U0` hunk headers
/// (`@@ -OLD[,N] +NEW[,M] @@`), with the line's text (without "\n").
struct GitLine final {
  char origin;
  long number;
  std::string text;
};
std::vector<GitLine> git_places(const TempRepo& repo, const std::string& range,
                                const std::string& path) {
  std::vector<GitLine> places;
  long old_at = 0, new_at = 0;
  for (const std::string& line : lines_of(repo.git("diff -U0 " + range + " -- " + path))) {
    if (line.rfind("@@ ", 0) == 0) {
      std::istringstream header(line.substr(3));
      std::string old_part, new_part;
      header >> old_part >> new_part;
      old_at = std::stol(old_part.substr(1));
      new_at = std::stol(new_part.substr(1));
    } else if (line.rfind("+++", 0) == 0 || line.rfind("---", 0) == 0) {
      continue;
    } else if (!line.empty() && line[0] == '+') {
      places.push_back({'+', new_at++, line.substr(1)});
    } else if (!line.empty() && line[0] == '-') {
      places.push_back({'-', old_at++, line.substr(1)});
    }
  }
  return places;
}

/// The one line of `places` with `origin` and `text`.
long place_of(const std::vector<GitLine>& places, char origin, const std::string& text) {
  long found = -1;
  for (const GitLine& line : places)
    if (line.origin == origin && line.text == text) {
      EXPECT_EQ(found, -1) << "two lines " << origin << text;
      found = line.number;
    }
  EXPECT_NE(found, -1) << "no line " << origin << text;
  return found;
}

TEST(CasesP25toP33, P30ExcerptsSayWhereTheSidesDiffer) {
  TempRepo repo;
  const std::string indent(80, ' ');
  const std::string spaces(100, ' ');
  // blank.py: both sides add x, y and a blank line, the blank at another place —
  // the first difference is a blank line on each side. deep.py: the source alone
  // adds a deeply indented line. space.py: the source alone adds a line of spaces.
  const Ports ports = make_ports(
      repo, {{"blank.py", "a\nb\nc\n"}, {"deep.py", "d\n"}, {"space.py", "s\n"}},
      {{"blank.py", "a\nx\n\ny\nb\nc\n"},
       {"deep.py", "d\ne\n" + indent + "return value\n"},
       {"space.py", "s\nt\n" + spaces + "\n"}},
      {{"blank.py", "top\na\nb\nc\n"}},
      {{"blank.py", "top\na\nx\ny\n\nb\nc\n"}, {"deep.py", "d\ne\n"}, {"space.py", "s\nt\n"}});
  const json report = report_json(repo, {ports.source, ports.target});

  // The blank lines: the same text, so each side names its line as git numbers it.
  const long source_blank = place_of(git_places(repo, ports.source, "blank.py"), '+', "");
  const long target_blank = place_of(git_places(repo, ports.target, "blank.py"), '+', "");
  ASSERT_NE(source_blank, target_blank);
  EXPECT_EQ(row_of(report, "blank.py")["first_difference"],
            "source +\"\\n\" (new line " + std::to_string(source_blank) +
                ") · target +\"\\n\" (new line " + std::to_string(target_blank) + ")");

  // A deep indent does not fill the window: the text is in view, no number needed.
  const std::string deep = row_of(report, "deep.py")["first_difference"];
  EXPECT_TRUE(contains(deep, "return value\\n\"")) << deep;
  EXPECT_TRUE(contains(deep, " · target (none)")) << deep;
  EXPECT_FALSE(contains(deep, "line ")) << deep;

  // Spaces only: the excerpt cannot show which line, so its number says.
  const long space_line = place_of(git_places(repo, ports.source, "space.py"), '+', spaces);
  const std::string space = row_of(report, "space.py")["first_difference"];
  EXPECT_TRUE(
      contains(space, "\"... (new line " + std::to_string(space_line) + ") · target (none)"))
      << space;

  // The same words in Markdown (code spans) and text.
  const CommandResult markdown = run_portdiff({"--repo", repo.dir(), ports.source, ports.target});
  EXPECT_TRUE(contains(markdown.out, "source `+\"\\n\"` (new line " + std::to_string(source_blank) +
                                         ") · target `+\"\\n\"` (new line " +
                                         std::to_string(target_blank) + ")"))
      << markdown.out;
  const CommandResult text = run_portdiff(
      {"--repo", repo.dir(), ports.source, ports.target, "--format", "text", "--color", "never"});
  EXPECT_TRUE(contains(text.out, "(new line " + std::to_string(target_blank) + ")")) << text.out;
}

}  // namespace
}  // namespace portdiff_test
