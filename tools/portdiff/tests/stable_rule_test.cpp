// Note [Stable diff rule] on generated files of the P2 kind: one edit (a function
// body wrapped in a loop, re-indented, its blank lines kept) over baselines cut at
// many places, top and tail. Oracle: `git diff -U0` for every count portdiff shows,
// and for the region reading `git diff -U0` of the region the test cuts out itself.

#include "git_oracle.h"
#include "repo_fixture.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace portdiff_test {
namespace {

using nlohmann::json;
using Lines = std::vector<std::string>;

/// One C function; `edited` wraps its body in a queue loop, as in P2.
Lines function_lines(int i, bool edited) {
  const std::string n = std::to_string(i);
  const Lines body = {"struct list *p;\n",
                      "\n",
                      "if (c->flags & FLAG_" + n + ")\n",
                      "\treturn 0;\n",
                      "c->flags |= FLAG_" + n + ";\n",
                      "\n",
                      "if (!c->parsed)\n",
                      "\treturn 0;\n",
                      "for (p = c->parents; p; p = p->next) {\n",
                      "\tif (p->item->flags & SEEN)\n",
                      "\t\tstep_" + n + "(data, p->item);\n",
                      "}\n"};
  Lines out = {"static int step_" + n + "(struct data *data, struct item *c)\n", "{\n"};
  const std::string indent = edited ? "\t\t" : "\t";
  if (edited)
    out.insert(out.end(),
               {"\tstruct queue queue = { NULL };\n", "\tstruct item *seen = c;\n", "\n",
                "\tqueue_put(&queue, seen);\n", "\twhile ((c = queue_get(&queue))) {\n"});
  for (const std::string& line : body) out.push_back(line == "\n" ? line : indent + line);
  if (edited) out.insert(out.end(), {"\t}\n", "\tclear_queue(&queue);\n"});
  out.insert(out.end(), {"\treturn 1;\n", "}\n", "\n"});
  return out;
}

Lines file_lines(int functions, int edited) {
  Lines out;
  for (int i = 0; i < functions; ++i) {
    const Lines f = function_lines(i, i == edited);
    out.insert(out.end(), f.begin(), f.end());
  }
  return out;
}

std::string join(const Lines& lines, std::size_t drop_top, std::size_t drop_tail) {
  std::string out;
  for (std::size_t i = drop_top; i + drop_tail < lines.size(); ++i) out += lines[i];
  return out;
}

std::pair<long, long> git_counts(const TempRepo& repo, const std::string& range) {
  const auto files = oracle_patch(repo, range, false);
  const OraclePatchFile& f = files.at("f.c");
  return {static_cast<long>(f.added.size()), static_cast<long>(f.deleted.size())};
}

/// Added/deleted lines `git diff` prints with `context` lines of context.
std::pair<long, long> git_counts_with_context(const TempRepo& repo, const std::string& range,
                                              int context) {
  const std::string diff = repo.git("diff --no-color --diff-algorithm=myers --indent-heuristic -U" +
                                    std::to_string(context) + " " + range);
  long added = 0, deleted = 0;
  std::size_t pos = 0;
  while (pos < diff.size()) {
    std::size_t end = diff.find('\n', pos);
    if (end == std::string::npos) end = diff.size();
    const std::string line = diff.substr(pos, end - pos);
    if (line.rfind("+++ ", 0) != 0 && line.rfind("--- ", 0) != 0) {
      if (!line.empty() && line[0] == '+') ++added;
      if (!line.empty() && line[0] == '-') ++deleted;
    }
    pos = end + 1;
  }
  return {added, deleted};
}

/// The region (Note [Stable diff rule]) cut out by the test itself, diffed by git.
std::pair<long, long> git_region_counts(const TempRepo& repo, const Lines& old_lines,
                                        const Lines& new_lines) {
  std::size_t prefix = 0;
  const std::size_t most = std::min(old_lines.size(), new_lines.size());
  while (prefix < most && old_lines[prefix] == new_lines[prefix]) ++prefix;
  std::size_t suffix = 0;
  while (prefix + suffix < most &&
         old_lines[old_lines.size() - 1 - suffix] == new_lines[new_lines.size() - 1 - suffix])
    ++suffix;
  repo.apply({{"region/old", join(old_lines, prefix, suffix)},
              {"region/new", join(new_lines, prefix, suffix)}});
  const CommandResult diff = run_command(
      "cd " + shell_quote(repo.dir()) +
      " && git diff --no-index --no-color --diff-algorithm=myers --indent-heuristic -U0 "
      "region/old region/new | grep -c '^+[^+]\\|^+$'; git diff --no-index --no-color "
      "--diff-algorithm=myers --indent-heuristic -U0 region/old region/new | grep -c "
      "'^-[^-]\\|^-$'");
  long added = 0, deleted = 0;
  std::sscanf(diff.out.c_str(), "%ld %ld", &added, &deleted);
  return {added, deleted};
}

TEST(StableRule, SameEditOverBaselinesCutAtManyPlaces) {
  constexpr int functions = 40, edited = 3;
  const Lines old_lines = file_lines(functions, -1);
  const Lines new_lines = file_lines(functions, edited);
  const std::size_t per_function = function_lines(0, false).size();
  const std::size_t edit_start = per_function * edited;
  const std::size_t after_edit = per_function * (functions - edited - 1);

  TempRepo repo;
  repo.apply({{"f.c", join(old_lines, 0, 0)}});
  const std::string base = repo.commit("base");
  repo.apply({{"f.c", join(new_lines, 0, 0)}});
  const std::string source = base + ".." + repo.commit("edit");
  const auto source_counts = git_counts(repo, source);

  std::vector<std::pair<std::size_t, std::size_t>> cuts;  // (top, tail)
  for (std::size_t tail = 0; tail <= after_edit; tail += 17) cuts.emplace_back(0, tail);
  for (std::size_t top = 4; top < edit_start; top += 4) cuts.emplace_back(top, 0);

  int git_u0_moved = 0, trim_mattered = 0, by_region = 0;
  for (const auto& [top, tail] : cuts) {
    SCOPED_TRACE("top " + std::to_string(top) + ", tail " + std::to_string(tail));
    repo.git("checkout -q -B variant " + base);
    repo.apply({{"f.c", join(old_lines, top, tail)}});
    const std::string target_base = repo.commit("cut baseline");
    repo.apply({{"f.c", join(new_lines, top, tail)}});
    const std::string target = target_base + ".." + repo.commit("edit, ported");

    const CommandResult run =
        run_portdiff({"--repo", repo.dir(), source, target, "--format", "json"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const json row = json::parse(run.out).at("files").at(0);
    const auto target_counts = git_counts(repo, target);
    // Every count shown is git -U0's.
    EXPECT_EQ(row["source"]["added"], source_counts.first);
    EXPECT_EQ(row["source"]["deleted"], source_counts.second);
    EXPECT_EQ(row["target"]["added"], target_counts.first);
    EXPECT_EQ(row["target"]["deleted"], target_counts.second);
    // The verdict is stable: the same edit is identical on every baseline.
    EXPECT_EQ(row["class"], "identical");
    if (target_counts != source_counts) {
      ++git_u0_moved;
      EXPECT_EQ(row["identical_by"], "region");
    } else {
      EXPECT_EQ(row["identical_by"], "git-u0");
    }
    if (row["identical_by"] == "region") {
      ++by_region;
      const auto region =
          git_region_counts(repo, Lines(old_lines.begin() + top, old_lines.end() - tail),
                            Lines(new_lines.begin() + top, new_lines.end() - tail));
      EXPECT_EQ(row["region"]["added"], region.first);
      EXPECT_EQ(row["region"]["deleted"], region.second);
    }
    if (git_counts_with_context(repo, target, 3) != target_counts) ++trim_mattered;
  }
  // The generator must reach the cases the rule exists for, or this test proves nothing:
  // git -U0 itself reads the edit differently on some baselines, and on some the
  // tail trim changes git's reading (which a libgit2 diff without it would miss).
  EXPECT_GT(git_u0_moved, 0);
  EXPECT_GT(trim_mattered, 0);
  EXPECT_EQ(by_region, git_u0_moved);
}

}  // namespace
}  // namespace portdiff_test
