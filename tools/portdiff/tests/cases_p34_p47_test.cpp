// The field cases P34–P47 (graph-cases-5.md): ports marked the way large projects
// mark them, read by the one port matcher in both directions; squashes and hints;
// and the audit's smaller promises — each checked against what git says.

#include "git_oracle.h"
#include "match/marks.h"
#include "repo_fixture.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>
#include <unistd.h>

namespace portdiff_test {
namespace {

using nlohmann::json;

json audit_json(const TempRepo& repo, const std::string& range, std::vector<std::string> onto,
                std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--repo", repo.dir(), "audit", range};
  for (const std::string& target : onto) args.insert(args.end(), {"--onto", target});
  args.insert(args.end(), {"--format", "json"});
  args.insert(args.end(), extra.begin(), extra.end());
  const CommandResult run = run_portdiff(args);
  EXPECT_TRUE(run.exit_code == 0 || run.exit_code == 1) << run.err;
  return json::parse(run.out);
}

const json& cell_of(const json& audit, const std::string& commit, std::size_t target = 0) {
  for (const json& row : audit["commits"])
    if (row["commit"] == commit) return row["cells"][target];
  static const json none;
  ADD_FAILURE() << "no commit " << commit << " in " << audit.dump();
  return none;
}

/// The commit a mark names, by git: the full SHA of an abbreviation, or "" when
/// the repository has no such commit.
std::string named_by_git(const TempRepo& repo, const std::string& hex) {
  const CommandResult run = run_command("git -C " + shell_quote(repo.dir()) +
                                        " rev-parse -q --verify " + hex + "^{commit}");
  return run.exit_code == 0 ? run.out.substr(0, 40) : "";
}

/// One mark kind: its JSON name and the message a port carries, given the marked
/// commit's SHA.
struct MarkCase final {
  std::string json_name;
  std::string (*message)(const std::string& sha);
};

const std::vector<MarkCase>& mark_cases() {
  static const std::vector<MarkCase> cases = {
      {"cherry-pick-trailer",
       [](const std::string& sha) {
         return "port one\n\nResolved by hand.\n\n(cherry picked from commit " + sha + ")\n";
       }},
      {"upstream-line",
       [](const std::string& sha) {
         return "port two\n\ncommit " + sha + " upstream.\n\nBackported to the old API.\n";
       }},
      {"upstream-bracket",
       [](const std::string& sha) {
         return "port three\n\n[ Upstream commit " + sha + " ]\n\nContext adjusted.\n";
       }},
      {"patchback",
       [](const std::string& sha) {
         return "[PR #4521/" + sha.substr(0, 8) + " backport][3.15] port four\n";
       }},
  };
  return cases;
}

/// main: one fix per mark kind, each in its own file; release (forked at base):
/// a port of each, changed by hand (so no patch rule holds) and with another
/// subject (so no hint), carrying the mark. Also a pair tied by Change-Id only.
struct MarkedRepo final {
  TempRepo repo;
  std::vector<std::string> fixes, ports;  // per mark case, then the Change-Id pair last
  MarkedRepo() {
    Edit base;
    for (int i = 0; i < 5; ++i) base["f" + std::to_string(i) + ".py"] = "a\nb\nc\n";
    repo.apply(base);
    repo.commit("base");
    repo.git("tag base");
    repo.git("branch release");
    for (int i = 0; i < 5; ++i) {
      repo.apply({{"f" + std::to_string(i) + ".py", "a\nB" + std::to_string(i) + "\nc\n"}});
      fixes.push_back(repo.commit(
          i < 4 ? "fix " + std::to_string(i)
                : "fix gerrit\n\nChange-Id: I0123456789abcdef0123456789abcdef01234567\n"));
    }
    repo.git("checkout -q release");
    for (int i = 0; i < 5; ++i) {
      repo.apply({{"f" + std::to_string(i) + ".py", "a\nb" + std::to_string(i) + "!\nc\n"}});
      ports.push_back(repo.commit(
          i < 4 ? mark_cases()[i].message(fixes[i])
                : "gerrit port\n\nChange-Id: I0123456789abcdef0123456789abcdef01234567\n"));
    }
    repo.git("checkout -q main");
  }
};

TEST(CasesP34toP47, P34P36EveryMarkIsReadInBothDirections) {
  MarkedRepo r;
  // git's view: no patch is equivalent (every port was changed by hand), and each
  // mark names its fix.
  for (const auto& [commit, sign] : git_cherry(r.repo, "release", "main", "base"))
    ASSERT_EQ(sign, '+') << commit;
  for (std::size_t i = 0; i < 4; ++i) {
    const std::string message = r.repo.git("log -1 --format=%B " + r.ports[i]);
    const std::string abbreviated = i == 3 ? r.fixes[i].substr(0, 8) : r.fixes[i];
    ASSERT_NE(message.find(abbreviated), std::string::npos);
    ASSERT_EQ(named_by_git(r.repo, abbreviated), r.fixes[i]);
  }
  const std::vector<std::string> names = {"cherry-pick-trailer", "upstream-line",
                                          "upstream-bracket", "patchback", "change-id"};
  // main onto release: the port carries the mark naming the source commit.
  const json forward = audit_json(r.repo, "base..main", {"release"});
  // release onto main: the source commit carries the mark naming its port.
  const json backward = audit_json(r.repo, "base..release", {"main"});
  for (std::size_t i = 0; i < 5; ++i) {
    const json& there = cell_of(forward, r.fixes[i]);
    EXPECT_EQ(there["status"], "different") << there.dump();
    EXPECT_EQ(there["port"], r.ports[i]) << there.dump();
    EXPECT_EQ(there["found_by"], json::array({names[i]})) << there.dump();
    const json& back = cell_of(backward, r.ports[i]);
    EXPECT_EQ(back["status"], "different") << back.dump();
    EXPECT_EQ(back["port"], r.fixes[i]) << back.dump();
    EXPECT_EQ(back["found_by"], json::array({names[i]})) << back.dump();
  }
  EXPECT_EQ(forward["targets"][0]["no_source"], json::array());
  EXPECT_EQ(backward["targets"][0]["no_source"], json::array());

  // find, both ways.
  for (std::size_t i = 0; i < 5; ++i) {
    const CommandResult there = run_portdiff(
        {"--repo", r.repo.dir(), "find", r.fixes[i], "--branches", "release", "--format", "json"});
    ASSERT_EQ(there.exit_code, 0) << there.err;
    const json found = json::parse(there.out);
    ASSERT_EQ(found["branches"][0]["ports"].size(), 1U) << found.dump();
    EXPECT_EQ(found["branches"][0]["ports"][0]["commit"], r.ports[i]);
    const CommandResult back = run_portdiff(
        {"--repo", r.repo.dir(), "find", r.ports[i], "--branches", "main", "--format", "json"});
    ASSERT_EQ(back.exit_code, 0) << back.err;
    const json found_back = json::parse(back.out);
    ASSERT_EQ(found_back["branches"][0]["ports"].size(), 1U) << found_back.dump();
    EXPECT_EQ(found_back["branches"][0]["ports"][0]["commit"], r.fixes[i]);
    EXPECT_EQ(found_back["branches"][0]["ports"][0]["found_by"], json::array({names[i]}));
  }
}

TEST(CasesP34toP47, P34TwoBackportsOfOneUpstreamCommitArePortsOfEachOther) {
  TempRepo repo;
  repo.apply({{"f.py", "a\nb\nc\n"}});
  repo.commit("base");
  repo.git("tag base");
  repo.git("branch 6.1.y");
  repo.git("branch 6.6.y");
  repo.apply({{"f.py", "a\nB\nc\n"}});
  const std::string upstream = repo.commit("fix b");
  repo.git("checkout -q 6.1.y");
  repo.apply({{"f.py", "a\nB1\nc\n"}});
  const std::string old_port = repo.commit("fix b for 6.1\n\ncommit " + upstream + " upstream.\n");
  repo.git("checkout -q 6.6.y");
  repo.apply({{"f.py", "a\nB6\nc\n"}});
  const std::string new_port =
      repo.commit("fix b for 6.6\n\n[ Upstream commit " + upstream + " ]\n");
  ASSERT_EQ(git_cherry(repo, "6.1.y", "6.6.y", "base").at(new_port), '+');
  const json audit = audit_json(repo, "base..6.6.y", {"6.1.y"});
  const json& cell = cell_of(audit, new_port);
  EXPECT_EQ(cell["port"], old_port) << cell.dump();
  EXPECT_EQ(cell["found_by"], json::array({"upstream-line", "upstream-bracket"})) << cell.dump();
}

TEST(CasesP34toP47, P35AMarkNamingNoCommitHereFallsThroughAndIsReported) {
  TempRepo repo;
  repo.apply({{"f.py", "a\nb\nc\n"}, {"g.py", "x\n"}});
  repo.commit("base");
  repo.git("tag base");
  repo.git("branch release");
  repo.apply({{"f.py", "a\nB\nc\n"}});
  const std::string fix = repo.commit("fix b");
  repo.apply({{"g.py", "x\ny\n"}});
  const std::string other = repo.commit("add y");
  const std::string gone = "0123456789abcdef0123456789abcdef01234567";  // a pre-rebase SHA
  ASSERT_EQ(named_by_git(repo, gone), "");
  repo.git("checkout -q release");
  // A clean pick whose trailer names the commit before a rebase: patch-id decides.
  repo.apply({{"f.py", "a\nB\nc\n"}});
  const std::string clean = repo.commit("fix b\n\n(cherry picked from commit " + gone + ")\n");
  // A change of its own with such a trailer: no rule holds.
  repo.apply({{"g.py", "x\nz\n"}});
  const std::string own = repo.commit("own z\n\n(cherry picked from commit " + gone + ")\n");
  const std::map<std::string, char> cherry = git_cherry(repo, "release", "main", "base");
  ASSERT_EQ(cherry.at(fix), '-');
  ASSERT_EQ(cherry.at(other), '+');

  const json audit = audit_json(repo, "base..main", {"release"});
  const json& cell = cell_of(audit, fix);
  EXPECT_EQ(cell["status"], "identical");
  EXPECT_EQ(cell["port"], clean);
  EXPECT_EQ(cell["found_by"], json::array({"patch-id", "changed-lines", "same-subject"}));
  const json unresolved =
      json::parse(R"([{"mark": "cherry-pick-trailer", "names": ")" + gone + R"("}])");
  EXPECT_EQ(cell["unresolved_marks"], unresolved);
  EXPECT_EQ(cell_of(audit, other)["status"], "not-ported");
  ASSERT_EQ(audit["targets"][0]["no_source"].size(), 1U);
  EXPECT_EQ(audit["targets"][0]["no_source"][0]["commit"], own);
  EXPECT_EQ(audit["targets"][0]["no_source"][0]["unresolved_marks"], unresolved);
  const CommandResult find = run_portdiff(
      {"--repo", repo.dir(), "find", fix, "--branches", "release", "--format", "json"});
  ASSERT_EQ(find.exit_code, 0) << find.err;
  EXPECT_EQ(json::parse(find.out)["branches"][0]["ports"][0]["unresolved_marks"], unresolved);
  // The other direction: the source row says it.
  const json back = audit_json(repo, "base..release", {"main"});
  for (const json& row : back["commits"]) EXPECT_EQ(row["unresolved_marks"], unresolved);
  const CommandResult text = run_portdiff(
      {"--repo", repo.dir(), "audit", "base..release", "--onto", "main", "--format", "text"});
  EXPECT_TRUE(contains(
      text.out, "cherry-pick trailer names " + gone.substr(0, 12) + ", not in the repository"))
      << text.out;
}

TEST(CasesP34toP47, P37AHintIsNeverAnotherCommitsProvenPort) {
  TempRepo repo;
  repo.apply({{"a.md", "a\n"}, {"b.md", "b\n"}});
  repo.commit("base");
  repo.git("tag base");
  repo.git("branch release");
  repo.apply({{"a.md", "a!\n"}});
  const std::string first = repo.commit("doc fixes");
  repo.apply({{"b.md", "b!\n"}});
  const std::string second = repo.commit("doc fixes");
  repo.git("checkout -q release");
  repo.apply({{"a.md", "a!!\n"}});  // changed by hand: only the trailer ties it
  const std::string port = repo.commit("doc fixes\n\n(cherry picked from commit " + first + ")\n");
  // git: the port's trailer names the first commit; neither patch is equivalent.
  ASSERT_EQ(named_by_git(repo, first), first);
  ASSERT_EQ(git_cherry(repo, "release", "main", "base").at(second), '+');

  const json audit = audit_json(repo, "base..main", {"release"}, {"--hints"});
  EXPECT_EQ(cell_of(audit, first)["port"], port);
  EXPECT_EQ(cell_of(audit, second)["status"], "not-ported") << cell_of(audit, second).dump();
  EXPECT_EQ(cell_of(audit, second)["port"], nullptr);
  const CommandResult find = run_portdiff(
      {"--repo", repo.dir(), "find", second, "--branches", "release", "--format", "json"});
  ASSERT_EQ(find.exit_code, 0) << find.err;
  EXPECT_EQ(json::parse(find.out)["branches"][0]["ports"], json::array()) << find.out;
}

TEST(CasesP34toP47, P38ASquashedBackportIsOneSquashWithEverySource) {
  TempRepo repo;
  repo.apply({{"a.py", "a\n"}, {"b.py", "b\n"}, {"c.py", "c\n"}});
  repo.commit("base");
  repo.git("tag base");
  repo.git("branch release");
  repo.git("branch old");
  std::vector<std::string> fixes;
  repo.apply({{"a.py", "a\n1\n"}});
  fixes.push_back(repo.commit("one"));
  repo.apply({{"b.py", "b\n2\n"}});
  fixes.push_back(repo.commit("two"));
  repo.apply({{"a.py", "a\n1\n3\n"}});
  fixes.push_back(repo.commit("three"));
  repo.apply({{"c.py", "c\n4\n"}});
  fixes.push_back(repo.commit("four"));
  // release: one commit with the four trailers, the range's change as one patch.
  repo.git("checkout -q release");
  repo.git("checkout " + fixes.back() + " -- a.py b.py c.py");
  std::string message = "backport fixes\n\n";
  for (const std::string& fix : fixes) message += "(cherry picked from commit " + fix + ")\n";
  const std::string squash = repo.commit(message);
  // git: the squash's patch is the range's (the same stable patch-id).
  const auto patch_id = [&](const std::string& command) {
    return run_command("git -C " + shell_quote(repo.dir()) + " " + command +
                       " | git patch-id --stable")
        .out.substr(0, 40);
  };
  ASSERT_EQ(patch_id("diff " + fixes.front() + "^ " + fixes.back()), patch_id("show " + squash));
  // old: a squash of the first and third only, which are not one range.
  repo.git("checkout -q old");
  repo.apply({{"a.py", "a\n1\n3\n"}});
  const std::string partial =
      repo.commit("backport one, three\n\n(cherry picked from commit " + fixes[0] +
                  ")\n(cherry picked from commit " + fixes[2] + ")\n");

  const json audit = audit_json(repo, "base..main", {"release", "old"});
  json covered = json::array();
  for (const std::string& fix : fixes) covered.push_back(fix);
  for (const std::string& fix : fixes) {
    const json& cell = cell_of(audit, fix, 0);
    EXPECT_EQ(cell["status"], "squash") << cell.dump();
    EXPECT_EQ(cell["port"], squash);
    EXPECT_EQ(cell["squash"], json({{"of", covered}, {"compared", true}})) << cell.dump();
    EXPECT_EQ(cell["files"], json::array()) << cell.dump();  // identical, as git's patch-id says
  }
  EXPECT_EQ(audit["targets"][0]["counts"]["squash"], 4);
  const json& first = cell_of(audit, fixes[0], 1);
  EXPECT_EQ(first["status"], "squash");
  EXPECT_EQ(first["squash"], json({{"of", {fixes[0], fixes[2]}}, {"compared", false}}));
  EXPECT_EQ(cell_of(audit, fixes[1], 1)["status"], "not-ported");
  EXPECT_EQ(cell_of(audit, fixes[2], 1)["port"], partial);

  const CommandResult text = run_portdiff({"--repo", repo.dir(), "audit", "base..main", "--onto",
                                           "release", "--format", "text", "--check"});
  EXPECT_EQ(text.exit_code, 0) << text.out;  // the squash is identical: all ported
  std::string list;
  for (const std::string& fix : fixes) list += (list.empty() ? "" : ", ") + fix.substr(0, 12);
  EXPECT_TRUE(contains(text.out, "squash " + squash.substr(0, 12) + " of " + list + ": identical"))
      << text.out;
  EXPECT_TRUE(contains(
      text.out, "in squash " + squash.substr(0, 12) + " (shown at " + fixes[0].substr(0, 12) + ")"))
      << text.out;
}

TEST(CasesP34toP47, P40EmptyCommitsAreEquivalentAsGitCherrySays) {
  TempRepo repo;
  repo.apply({{"f.py", "f\n"}});
  repo.commit("base");
  repo.git("tag base");
  repo.git("branch release");
  const std::string bump = repo.commit("bump version");  // empty
  repo.apply({{"f.py", "f\ng\n"}});
  const std::string change = repo.commit("add g");
  repo.git("checkout -q release");
  const std::string port = repo.commit("[1.x] bump version");  // empty too
  const std::map<std::string, char> cherry = git_cherry(repo, "release", "main", "base");
  ASSERT_EQ(cherry.at(bump), '-');
  ASSERT_EQ(cherry.at(change), '+');
  const json audit = audit_json(repo, "base..main", {"release"});
  EXPECT_EQ(cell_of(audit, bump)["status"], "identical") << audit.dump();
  EXPECT_EQ(cell_of(audit, bump)["port"], port);
  EXPECT_EQ(cell_of(audit, change)["status"], "not-ported");
  // and the other way round: git's '-' for the release's empty commit.
  ASSERT_EQ(git_cherry(repo, "main", "release", "base").at(port), '-');
  EXPECT_EQ(audit["targets"][0]["no_source"], json::array());
}

TEST(CasesP34toP47, P47ABranchHoldingTheOriginalInheritsNoPort) {
  TempRepo origin;
  origin.apply({{"f.py", "f\n"}});
  origin.commit("base");
  origin.git("branch 7.0.x");
  origin.apply({{"f.py", "f\nfix\n"}});
  const std::string fix = origin.commit("fix f");
  origin.git("checkout -q 7.0.x");
  origin.git("cherry-pick -x " + fix);
  const std::string port = origin.rev("HEAD");
  origin.git("checkout -q main");
  origin.git("merge -q --no-ff -m 'merge 7.0.x' 7.0.x");
  TempRepo clone;
  clone.git("remote add origin " + shell_quote(origin.dir()));
  clone.git("fetch -q origin");
  clone.git("symbolic-ref refs/remotes/origin/HEAD refs/remotes/origin/main");
  // git: origin/main holds the fix itself, and the port through the merge.
  ASSERT_EQ(run_command("git -C " + shell_quote(clone.dir()) + " merge-base --is-ancestor " + fix +
                        " origin/main")
                .exit_code,
            0);
  const CommandResult run = run_portdiff(
      {"--repo", clone.dir(), "find", fix, "--branches", "origin/*", "--format", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json found = json::parse(run.out);
  for (const json& branch : found["branches"]) {
    if (branch["branch"] == "origin/main") {
      EXPECT_EQ(branch["contains_commit"], true);
      EXPECT_EQ(branch["inherited"], json::array()) << found.dump();
    } else {
      EXPECT_EQ(branch["branch"], "origin/7.0.x");
      ASSERT_EQ(branch["ports"].size(), 1U);
      EXPECT_EQ(branch["ports"][0]["commit"], port);
    }
  }
}

TEST(CasesP34toP47, P42AuditCellsKeepNonUtf8NamesDistinct) {
  TempRepo repo;
  const std::string first = "n\351.txt", second = "n\352.txt";  // Latin-1 bytes
  repo.apply({{first, "a\n"}, {second, "b\n"}});
  repo.commit("base");
  repo.git("tag base");
  repo.git("branch release");
  repo.apply({{first, "a\n1\n"}, {second, "b\n2\n"}});
  const std::string fix = repo.commit("fix both");
  repo.git("checkout -q release");
  repo.apply({{first, "a\n1!\n"}, {second, "b\n2!\n"}});
  repo.commit("fix both\n\n(cherry picked from commit " + fix + ")\n");
  // git's quoting of the two names (core.quotePath, on by default, octal for bad UTF-8).
  std::istringstream names(repo.git("diff --name-only " + fix + "^ " + fix));
  std::vector<std::string> git_names;
  for (std::string line; std::getline(names, line);) git_names.push_back(line);
  ASSERT_EQ(git_names.size(), 2U);
  ASSERT_NE(git_names[0], git_names[1]);
  const json audit = audit_json(repo, "base..main", {"release"});
  const json& cell = cell_of(audit, fix);
  ASSERT_EQ(cell["files"].size(), 2U) << cell.dump();
  std::vector<std::string> quoted;
  for (const json& file : cell["files"]) quoted.push_back(file["path_quoted"]);
  std::sort(quoted.begin(), quoted.end());
  std::sort(git_names.begin(), git_names.end());
  EXPECT_EQ(quoted, git_names);
}

TEST(CasesP34toP47, P45TheTextTableIsAlignedInTerminalColumns) {
  if (run_command("python3 -c 'import unicodedata'").exit_code != 0)
    GTEST_SKIP() << "python3 (the column oracle) is not available";
  TempRepo repo;
  repo.apply({{"f.py", "1\n2\n3\n"}});
  repo.commit("base");
  repo.git("tag base");
  repo.git("branch release");
  const std::vector<std::string> subjects = {
      "修复：日本語のテキストを正しく処理する長いサブジェクトです", "🎉 emoji party fix 🎉 ✅",
      "plain ascii subject", "e\xcc\x81t\xc3\xa9 combining accents and a long tail of words"};
  std::vector<std::string> fixes;
  for (std::size_t i = 0; i < subjects.size(); ++i) {
    repo.apply({{"g" + std::to_string(i) + ".py", std::to_string(i) + "\n"}});
    fixes.push_back(repo.commit(subjects[i]));
  }
  repo.git("checkout -q release");
  repo.git("cherry-pick -x " + fixes[0] + " " + fixes[2]);
  const CommandResult run = run_portdiff(
      {"--repo", repo.dir(), "audit", "base..main", "--onto", "release", "--format", "text"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // Python's reading: strict UTF-8 (no sequence cut), and the column where each
  // row's target cell starts, a wide character two columns, a combining mark none.
  const std::string oracle =
      "import sys, unicodedata\n"
      "text = sys.stdin.buffer.read().decode('utf-8')\n"
      "w = lambda s: sum(0 if unicodedata.combining(c) else 2 if "
      "unicodedata.east_asian_width(c) in 'WF' else 1 for c in s)\n"
      "cols = set()\n"
      "for line in text.split('\\n'):\n"
      "    for word in ('release', 'identical ', 'not ported'):\n"
      "        at = line.find(word)\n"
      "        if line.startswith('  ') and at > 0:\n"
      "            cols.add(w(line[:at])); break\n"
      "print(len(cols))\n";
  const std::string script = repo.dir() + "/../p45_oracle.py";
  {
    std::ofstream out(script);
    out << oracle;
  }
  const std::string file = repo.dir() + "/../p45_out.txt";
  {
    std::ofstream out(file, std::ios::binary);
    out << run.out;
  }
  const CommandResult columns =
      run_command("python3 " + shell_quote(script) + " < " + shell_quote(file));
  std::remove(script.c_str());
  std::remove(file.c_str());
  ASSERT_EQ(columns.exit_code, 0) << columns.err;
  EXPECT_EQ(columns.out, "1\n") << run.out;
}

TEST(CasesP34toP47, P46OneTargetOnceAndColourWhenAsked) {
  TempRepo repo;
  repo.apply({{"f.py", "f\n"}});
  repo.commit("base");
  repo.git("tag base");
  repo.git("branch release");
  repo.apply({{"f.py", "f\nfix\n"}});
  const std::string fix = repo.commit("fix f");
  repo.git("checkout -q release");
  repo.git("cherry-pick -x " + fix);
  const std::string head = repo.rev("release");
  const json twice = audit_json(repo, "base..main", {"release", "release", head});
  ASSERT_EQ(twice["targets"].size(), 1U) << twice.dump();
  EXPECT_EQ(twice["targets"][0]["label"], "release = " + head);
  EXPECT_EQ(twice["commits"][0]["cells"].size(), 1U);
  const CommandResult audit = run_portdiff({"--repo", repo.dir(), "audit", "base..main", "--onto",
                                            "release", "--format", "text", "--color", "always"});
  EXPECT_TRUE(contains(audit.out, "\033[32midentical ")) << audit.out;
  const CommandResult plain = run_portdiff({"--repo", repo.dir(), "audit", "base..main", "--onto",
                                            "release", "--format", "text", "--color", "never"});
  EXPECT_FALSE(contains(plain.out, "\033[")) << plain.out;
  const CommandResult find = run_portdiff({"--repo", repo.dir(), "find", fix, "--branches",
                                           "release", "--format", "text", "--color", "always"});
  EXPECT_TRUE(contains(find.out, "\033[32m" + head.substr(0, 12))) << find.out;
}

TEST(CasesP34toP47, P44ARepositoryOfAnotherUserIsSaidAsGitSaysIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving the repository to another user needs root";
  TempRepo repo;
  repo.apply({{"f.py", "f\n"}});
  repo.commit("base");
  repo.apply({{"f.py", "f\ng\n"}});
  repo.commit("add g");
  ASSERT_EQ(run_command("chown -R 65534 " + shell_quote(repo.dir())).exit_code, 0);
  const CommandResult git = run_command("git -C " + shell_quote(repo.dir()) + " status");
  ASSERT_NE(git.exit_code, 0);
  ASSERT_TRUE(contains(git.err, "detected dubious ownership")) << git.err;
  const std::size_t at = git.err.find("git config --global --add safe.directory ");
  ASSERT_NE(at, std::string::npos) << git.err;
  const std::string advice = git.err.substr(at, git.err.find('\n', at) - at);
  const CommandResult run = run_portdiff({"--repo", repo.dir(), "HEAD", "HEAD~1..HEAD"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(contains(run.err, "detected dubious ownership in repository at '")) << run.err;
  EXPECT_TRUE(contains(run.err, advice + "\n")) << run.err << " vs " << advice;
  run_command("chown -R 0 " + shell_quote(repo.dir()));
}

TEST(CasesP34toP47, P39ARenamePortOfEqualPatchIdIsIdenticalAndSaysHow) {
  TempRepo repo;
  std::string lines;
  for (int i = 1; i <= 30; ++i) lines += "line " + std::to_string(i) + "\n";
  repo.apply({{"a.py", lines}});
  repo.commit("base");
  repo.git("tag base");
  repo.git("branch release");
  std::string edited = lines;
  edited.replace(edited.find("line 25\n"), 8, "line 25 fixed\n");
  repo.apply({{"a.py", std::nullopt}, {"b.py", edited}});
  const std::string fix = repo.commit("move a to b");
  repo.git("checkout -q release");
  std::string drifted = lines;  // the release's baseline differs far from the edit
  drifted.replace(0, 7, "line one\n");
  repo.apply({{"a.py", drifted}});
  repo.commit("release: reword line 1");
  repo.git("cherry-pick -x " + fix);
  const std::string port = repo.rev("HEAD");
  // git: `git show`'s patch-ids (renames found) are equal, and it is a rename on both sides.
  const auto patch_id = [&](const std::string& commit) {
    return run_command("git -C " + shell_quote(repo.dir()) + " show " + commit +
                       " | git patch-id --stable")
        .out.substr(0, 40);
  };
  ASSERT_EQ(patch_id(fix), patch_id(port));
  ASSERT_TRUE(contains(repo.git("show --format= --name-status " + port), "R"));
  const json audit = audit_json(repo, "base..main", {"release"});
  const json& cell = cell_of(audit, fix);
  EXPECT_EQ(cell["status"], "identical") << cell.dump();
  EXPECT_EQ(cell["port"], port);
  EXPECT_EQ(cell["renames_found"], true);
  // The default pair report reads two rows, and the deletion differs (the baselines).
  const CommandResult pair =
      run_portdiff({"--repo", repo.dir(), fix, port, "--format", "json", "--brief"});
  EXPECT_NE(json::parse(pair.out)["files"].size(), 0U);
  const CommandResult text = run_portdiff(
      {"--repo", repo.dir(), "audit", "base..main", "--onto", "release", "--format", "text"});
  EXPECT_TRUE(contains(text.out, "(renames found, as its patch-id reads them)")) << text.out;
}

TEST(CasesP34toP47, P36MarksAreReadOnlyWhereTheyAreWritten) {
  using portdiff::MarkKind;
  const std::string sha = "0123456789abcdef0123456789abcdef01234567";
  const portdiff::Marks marks =
      portdiff::read_marks("[PR #12/89abcdef backport][3.15] fix\n\nSee commit " + sha +
                           " upstream. in prose: not a mark.\n  commit " + sha.substr(0, 12) +
                           " upstream.\n(cherry picked from commit 012345)\n[ Upstream commit " +
                           sha + " ]\n(cherry picked from commit " + sha.substr(0, 7) +
                           ")\nChange-Id: Iaaaa\nChange-Id: Ibbbb\n");
  ASSERT_EQ(marks.commits.size(), 4U);  // a 6-digit SHA and a mark inside prose are not
  const std::vector<std::pair<MarkKind, std::string>> expected = {
      {MarkKind::cherry_pick, sha.substr(0, 7)},
      {MarkKind::upstream_bracket, sha},
      {MarkKind::patchback, "89abcdef"},
      {MarkKind::upstream_line, sha.substr(0, 12)}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(marks.commits[i].kind, expected[i].first) << i;
    EXPECT_EQ(marks.commits[i].hex, expected[i].second) << i;
  }
  EXPECT_EQ(marks.change_id, "Ibbbb");  // the last trailer
}

}  // namespace
}  // namespace portdiff_test
