// Round-four cases (P25–P33) of tests/cases/README.md, each against git's own answer.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "git_oracle.h"
#include "repo_fixture.h"

namespace portdiff_test {
namespace {

using nlohmann::json;

json find_report(const TempRepo& repo, const std::string& commit) {
  const CommandResult run = run_portdiff({"--repo", repo.dir(), "find", commit, "--branches",
                                          "release-*", "--report", "--format", "json"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return json::parse(run.out);
}

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

}  // namespace
}  // namespace portdiff_test
