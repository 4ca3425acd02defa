// Field cases P3-P9 (tests/cases/README.md), each
// checked against git where git has an answer.

#include "git_oracle.h"
#include "repo_fixture.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace portdiff_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string head_of(const std::string& range) { return range.substr(range.find("..") + 2); }

void expect_error(const CommandResult& run, const std::vector<std::string>& needles) {
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(run.out.empty()) << run.out;
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << run.err;  // one line
  for (const std::string& needle : needles) EXPECT_TRUE(contains(run.err, needle)) << run.err;
}

// P3: a report pinned to SHAs depends on the SHAs only.
TEST(Cases, P3AttributesFromTheWorkTreeChangeNothing) {
  TempRepo repo;
  const Ports ports =
      make_ports(repo, {{"a.dat", "a\n"}}, {{"a.dat", "a\nb\n"}}, {}, {{"a.dat", "a\nb\n"}});
  const auto oracle = oracle_classify(repo, ports, false);  // before any attribute exists
  const std::vector<std::string> args = {"--repo",     repo.dir(), ports.source,
                                         ports.target, "--format", "json"};
  const CommandResult clean = run_portdiff(args);
  ASSERT_EQ(clean.exit_code, 0) << clean.err;

  repo.apply({{".gitattributes", "a.dat -diff\n"}, {".git/info/attributes", "a.dat binary\n"}});
  const CommandResult with_attributes = run_portdiff(args);
  ASSERT_EQ(with_attributes.exit_code, 0) << with_attributes.err;
  EXPECT_EQ(with_attributes.out, clean.out);
  const json row = json::parse(with_attributes.out)["files"][0];
  EXPECT_EQ(row["class"], oracle.at("a.dat").verdict);
  EXPECT_EQ(row["source"]["binary"], false);
  EXPECT_EQ(row["source"]["added"], oracle.at("a.dat").source_added);
}

// P4: every write error exits 2 with a message.
TEST(Cases, P4WriteErrorsExitTwo) {
  TempRepo repo;
  const Ports ports = make_ports(repo, {{"a", "a\n"}}, {{"a", "b\n"}}, {}, {{"a", "b\n"}});
  const std::string command = shell_quote(PORTDIFF_EXE) + " --repo " + shell_quote(repo.dir()) +
                              " " + ports.source + " " + ports.target;
  const CommandResult full = run_command(command + " >/dev/full");
  EXPECT_EQ(full.exit_code, 2);
  EXPECT_TRUE(contains(full.err, "cannot write the report to standard output")) << full.err;
  const CommandResult closed = run_command(command + " >&-");
  EXPECT_EQ(closed.exit_code, 2);
  EXPECT_TRUE(contains(closed.err, "cannot write the report")) << closed.err;
  expect_error(
      run_portdiff({"--repo", repo.dir(), ports.source, ports.target, "--output", "/dev/full"}),
      {"cannot write the report to '/dev/full'"});
  expect_error(
      run_portdiff({"--repo", repo.dir(), ports.source, ports.target, "--output", repo.dir()}),
      {"cannot write the report to '" + repo.dir() + "'"});
  const CommandResult help = run_command(shell_quote(PORTDIFF_EXE) + " --help >/dev/full");
  EXPECT_EQ(help.exit_code, 2);
}

// P4: a reader that is gone (a broken pipe) is a write error too, not a silent
// death by SIGPIPE: the pipe's read end is closed before portdiff writes a byte.
TEST(Cases, P4BrokenPipeIsAWriteError) {
  TempRepo repo;
  const Ports ports = make_ports(repo, {{"a", "a\n"}}, {{"a", "b\n"}}, {}, {{"a", "b\n"}});
  const std::string err_path = repo.dir() + "/stderr.txt";
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(err, STDERR_FILENO);
    ::execl(PORTDIFF_EXE, PORTDIFF_EXE, "--repo", repo.dir().c_str(), ports.source.c_str(),
            ports.target.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 2);
  std::ifstream in(err_path);
  std::stringstream err;
  err << in.rdbuf();
  EXPECT_TRUE(contains(err.str(), "cannot write the report to standard output: Broken pipe"))
      << err.str();
}

// P5: a head that does not descend from its base is an error naming both.
TEST(Cases, P5NonDescendantRangeIsAnError) {
  TempRepo repo;
  repo.apply({{"a", "1\n"}});
  repo.commit("c1");
  repo.apply({{"a", "2\n"}});
  repo.commit("c2");
  repo.apply({{"a", "3\n"}});
  repo.commit("c3");
  repo.git("checkout -q -b side main~2");
  repo.apply({{"b", "side\n"}});
  repo.commit("s1");
  repo.git("checkout -q main");
  const Ports ok = {repo.rev("main~1") + "..main", repo.rev("main~1") + "..main"};
  // git's answer: main does not descend from side.
  EXPECT_EQ(run_command("git -C " + shell_quote(repo.dir()) + " merge-base --is-ancestor side main")
                .exit_code,
            1);
  expect_error(
      run_portdiff({"--repo", repo.dir(), "side..main", ok.target}),
      {"source 'side..main'", "'main' (" + repo.rev("main").substr(0, 12) + ")",
       "'side' (" + repo.rev("side").substr(0, 12) + ")", "does not descend", "BASE...HEAD"});
  // The merge-base reading, as git diff side...main.
  const CommandResult three =
      run_portdiff({"--repo", repo.dir(), "side...main", ok.target, "--format", "json"});
  ASSERT_EQ(three.exit_code, 0) << three.err;
  std::string merge_base = repo.git("merge-base side main");
  merge_base.pop_back();
  EXPECT_EQ(json::parse(three.out)["source"]["base"], merge_base);

  repo.git("checkout -q --orphan other");
  repo.apply({{"c", "x\n"}});
  repo.commit("unrelated");
  expect_error(run_portdiff({"--repo", repo.dir(), "other..main", ok.target}),
               {"does not descend", "'other'"});
  expect_error(run_portdiff({"--repo", repo.dir(), "other...main", ok.target}),
               {"no merge base", "unrelated"});
}

// P6: ranges inside a shallow clone work; ranges past its boundary say "shallow".
TEST(Cases, P6ShallowClone) {
  TempRepo origin;
  std::vector<std::string> commits;
  for (int i = 1; i <= 4; ++i) {
    origin.apply({{"a", std::to_string(i) + "\n"}, {"f" + std::to_string(i), "x\n"}});
    commits.push_back(origin.commit("c" + std::to_string(i)));
  }
  TempRepo clone;
  fs::remove_all(clone.dir());
  const CommandResult cloned =
      run_command("git clone -q --depth 2 file://" + origin.dir() + " " + shell_quote(clone.dir()));
  ASSERT_EQ(cloned.exit_code, 0) << cloned.err;
  const auto git_can_diff = [&](const std::string& range) {
    return run_command("git -C " + shell_quote(clone.dir()) + " diff " + range).exit_code == 0;
  };

  ASSERT_TRUE(git_can_diff("HEAD~1..HEAD"));
  const Ports inside{commits[2] + ".." + commits[3], commits[2] + ".." + commits[3]};
  const CommandResult run =
      run_portdiff({"--repo", clone.dir(), inside.source, inside.target, "--format", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto oracle = oracle_patch(clone, inside.source, false);
  const json report = json::parse(run.out);
  EXPECT_EQ(report["totals"]["files"], oracle.size());
  EXPECT_EQ(report["totals"]["identical"], oracle.size());

  ASSERT_FALSE(git_can_diff("HEAD~2..HEAD"));
  expect_error(run_portdiff({"--repo", clone.dir(), "HEAD~2..HEAD", inside.target}),
               {"source 'HEAD~2..HEAD'", "shallow"});
  ASSERT_FALSE(git_can_diff(commits[0] + ".." + commits[3]));
  expect_error(run_portdiff({"--repo", clone.dir(), commits[0] + ".." + commits[3], inside.target}),
               {"shallow"});
  // The boundary commit alone means its parent..it, and its parent is not here.
  ASSERT_FALSE(git_can_diff(commits[2] + "^.." + commits[2]));
  expect_error(run_portdiff({"--repo", clone.dir(), commits[2], inside.target}), {"shallow"});
}

// P7: every name and note is escaped; distinct names print distinctly.
TEST(Cases, P7EscapingInEveryFormat) {
  TempRepo repo;
  const std::string text = "alpha\nbeta\ngamma\ndelta\n";
  const std::string old_name = "old|x\ny.txt";
  const std::vector<std::string> names = {"x\ny",  "x\\ny",       "a`b",
                                          "`tick", "bad\xff.txt", "bad\xfe.txt"};
  Edit base = {{old_name, text}}, change = {{old_name, std::nullopt}, {"new.txt", text + "e\n"}};
  for (const std::string& name : names) {
    base[name] = "1\n";
    change[name] = "1\n2\n";
  }
  const Ports ports = make_ports(repo, base, change, {}, change);
  const CommandResult md =
      run_portdiff({"--repo", repo.dir(), ports.source, ports.target, "--find-renames"});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_TRUE(contains(md.out, "renamed from `\"old\\|x\\ny.txt\"`")) << md.out;
  EXPECT_TRUE(contains(md.out, "| `\"x\\ny\"` |")) << md.out;
  EXPECT_TRUE(contains(md.out, "| `\"x\\\\ny\"` |")) << md.out;
  EXPECT_TRUE(contains(md.out, "| ``a`b`` |")) << md.out;
  EXPECT_TRUE(contains(md.out, "| `` `tick `` |")) << md.out;
  // Every table row keeps its column count: no raw newline or bare pipe from a name.
  std::istringstream lines(md.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| `", 0) != 0 || !contains(line, "+1/-0")) continue;
    std::size_t pipes = 0;
    for (std::size_t i = 0; i < line.size(); ++i)
      if (line[i] == '|' && (i == 0 || line[i - 1] != '\\')) ++pipes;
    EXPECT_EQ(pipes, 6u) << line;  // identical table: 5 columns
  }

  // Quoted names equal git's own quoting (core.quotePath on: every byte >= 0x80 in
  // octal; these names are ASCII apart from the invalid bytes).
  const CommandResult json_run =
      run_portdiff({"--repo", repo.dir(), ports.source, ports.target, "--format", "json"});
  ASSERT_EQ(json_run.exit_code, 0) << json_run.err;
  std::set<std::string> quoted_by_portdiff;
  const json report = json::parse(json_run.out);
  for (const json& row : report["files"])
    quoted_by_portdiff.insert(row["path_quoted"].get<std::string>());
  std::istringstream git_names(
      repo.git("-c core.quotePath=true diff --no-renames --name-only " + ports.source));
  std::size_t checked = 0;
  for (std::string name; std::getline(git_names, name);) {
    if (name.find("\\3") == std::string::npos && name.find("\\n") == std::string::npos) continue;
    EXPECT_EQ(quoted_by_portdiff.count(name), 1u) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 5u);  // two invalid-UTF-8 names, x\ny, x\\ny and the old name
  EXPECT_EQ(quoted_by_portdiff.size(), names.size() + 2);

  const CommandResult text_run =
      run_portdiff({"--repo", repo.dir(), ports.source, ports.target, "--format", "text"});
  EXPECT_TRUE(contains(text_run.out, "\"x\\ny\" ")) << text_run.out;
  EXPECT_TRUE(contains(text_run.out, "\"x\\\\ny\" ")) << text_run.out;
  EXPECT_FALSE(contains(text_run.out, "x\ny"));
}

// P8: `--output -` is stdout; -h/--help wins over other errors.
TEST(Cases, P8OutputDashAndHelpFirst) {
  TempRepo repo;
  const Ports ports = make_ports(repo, {{"a", "a\n"}}, {{"a", "b\n"}}, {}, {{"a", "b\n"}});
  const CommandResult run =
      run_command("cd " + shell_quote(repo.dir()) + " && " + shell_quote(PORTDIFF_EXE) + " " +
                  ports.source + " " + ports.target + " --format json --output -");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out)["totals"]["identical"], 1);
  EXPECT_FALSE(fs::exists(fs::path(repo.dir()) / "-"));
  for (const std::vector<std::string>& args : {std::vector<std::string>{"-h", "--format", "xml"},
                                               {"--format", "xml", "--help"},
                                               {"--nosuch", "-h"}}) {
    const CommandResult help = run_portdiff(args);
    EXPECT_EQ(help.exit_code, 0) << help.err;
    EXPECT_TRUE(contains(help.out, "Usage")) << help.out;
    EXPECT_TRUE(help.err.empty()) << help.err;
  }
}

/// Added/deleted line counts of `git diff -U0` between two blobs.
std::pair<long, long> git_blob_counts(const TempRepo& repo, const std::string& a,
                                      const std::string& b) {
  const auto patch_counts = [&](char sign) {
    const CommandResult run = run_command(
        "git -C " + shell_quote(repo.dir()) + " diff -U0 --no-color " + a + " " + b +
        " | grep -c '^" + std::string(1, sign) + "\\([^" + std::string(1, sign) + "]\\|$\\)'");
    return std::strtol(run.out.c_str(), nullptr, 10);
  };
  return {patch_counts('+'), patch_counts('-')};
}

// P9: the report's form (the README's "Rules"), with a verdict line on top, excerpts, collapsed
// identical rows and notes on how final files differ (checked against git diff of the blobs).
TEST(Cases, P9ReportForReviewers) {
  TempRepo repo;
  Edit base, source, baseline, target;
  for (int i = 0; i < 11; ++i) {
    const std::string name = "same" + std::to_string(i) + ".py";
    base[name] = "a\n";
    source[name] = target[name] = "a\nb\n";
  }
  base["blank.py"] = "x = 1\n\ny = 2\n";
  baseline["blank.py"] = "x = 1\n\n\ny = 2\n";  // the target's baseline has one more blank line
  source["blank.py"] = "import os\nx = 1\n\ny = 2\n";
  target["blank.py"] = "import os\nx = 1\n\n\ny = 2\n";
  base["version.py"] = "v = 1\nname = 'a'\n";
  baseline["version.py"] = "v = 2\nname = 'a'\n";
  source["version.py"] = "v = 1\nname = 'b'\n";
  target["version.py"] = "v = 2\nname = 'b'\n";
  base["differs.py"] = "a\n";
  source["differs.py"] = "a\nb\n";
  target["differs.py"] = "a\nB\n";
  const Ports ports = make_ports(repo, base, source, baseline, target);
  const auto oracle = oracle_classify(repo, ports, false);
  std::size_t identical = 0;
  for (const auto& [path, row] : oracle) identical += row.verdict == "identical";
  ASSERT_EQ(identical, 13u);

  const CommandResult run = run_portdiff({"--repo", repo.dir(), ports.source, ports.target});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string& md = run.out;
  // The verdict line comes right after the title, before section 1.
  const std::string verdict =
      "**Verdict: not identical — 14 files: 13 identical (final files equal: 11), 1 different, "
      "0 only-source, 0 only-target.**";
  EXPECT_EQ(md.find(verdict), md.find('\n') + 2) << md;
  // The report's sections, in their fixed order.
  std::size_t at = 0;
  for (const char* heading :
       {"## 1. Purpose", "## 2. Rules", "## 3. Totals", "### 3.1 Identical",
        "<details><summary>13 identical files (2 with a note)</summary>", "### 3.2 Different",
        "### 3.3 Only source", "### 3.4 Only target", "## 4. Test functions"}) {
    const std::size_t found = md.find(heading, at);
    EXPECT_NE(found, std::string::npos) << heading;
    if (found != std::string::npos) at = found;
  }
  EXPECT_TRUE(contains(md, "first difference: source `+\"b\\n\"` · target `+\"B\\n\"`")) << md;

  // Final-file notes agree with git diff -U0 of the two final blobs.
  const std::string s_head = head_of(ports.source), t_head = head_of(ports.target);
  const auto blank = git_blob_counts(repo, s_head + ":blank.py", t_head + ":blank.py");
  EXPECT_TRUE(contains(md, "+" + std::to_string(blank.first) + "/-" + std::to_string(blank.second) +
                               " between final files: blank lines only"))
      << md;
  const auto version = git_blob_counts(repo, s_head + ":version.py", t_head + ":version.py");
  EXPECT_TRUE(contains(md, "+" + std::to_string(version.first) + "/-" +
                               std::to_string(version.second) +
                               " between final files: first `-\"v = 1\\n\"` `+\"v = 2\\n\"`"))
      << md;

  // --brief: the verdict line and the rows that are not identical.
  const CommandResult brief =
      run_portdiff({"--repo", repo.dir(), ports.source, ports.target, "--brief"});
  ASSERT_EQ(brief.exit_code, 0) << brief.err;
  EXPECT_EQ(brief.out.rfind(verdict, 0), 0u) << brief.out;
  EXPECT_TRUE(contains(brief.out, "`differs.py`"));
  EXPECT_FALSE(contains(brief.out, "same0.py"));
  EXPECT_FALSE(contains(brief.out, "blank.py"));
  const CommandResult brief_text = run_portdiff(
      {"--repo", repo.dir(), ports.source, ports.target, "--brief", "--format", "text"});
  EXPECT_EQ(brief_text.out.rfind("Verdict: not identical", 0), 0u) << brief_text.out;
  EXPECT_TRUE(contains(brief_text.out, "differs.py"));
  EXPECT_FALSE(contains(brief_text.out, "same0.py"));
}

TEST(Cases, P9ColourOnATerminalOnly) {
  TempRepo repo;
  const Ports ports = make_ports(repo, {{"a", "a\n"}}, {{"a", "b\n"}}, {}, {{"a", "c\n"}});
  const std::string command = shell_quote(PORTDIFF_EXE) + " --repo " + shell_quote(repo.dir()) +
                              " " + ports.source + " " + ports.target + " --format text";
  const auto coloured = [](const CommandResult& run) { return contains(run.out, "\033["); };
  EXPECT_FALSE(coloured(run_command(command)));  // not a terminal
  EXPECT_TRUE(coloured(run_command(command + " --color always")));
  EXPECT_TRUE(coloured(run_command("NO_COLOR=1 " + command + " --color always")));
  EXPECT_FALSE(coloured(run_command(command + " --color never")));
  EXPECT_FALSE(coloured(run_command(command + " --format md --color always")));  // text only
  // On a terminal (script(1) gives one): colour unless NO_COLOR is set and not empty.
  if (run_command("command -v script").exit_code != 0) GTEST_SKIP() << "no script(1)";
  const auto on_tty = [&](const std::string& env) {
    return run_command(env + " script -qec " + shell_quote(command) + " /dev/null");
  };
  EXPECT_TRUE(coloured(on_tty("")));
  EXPECT_TRUE(coloured(on_tty("NO_COLOR=")));
  EXPECT_FALSE(coloured(on_tty("NO_COLOR=1")));
}

}  // namespace
}  // namespace portdiff_test
