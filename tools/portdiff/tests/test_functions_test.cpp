// Test-function comparison end to end: a test file ported to two branches, read
// back from portdiff's JSON. Expectations follow from how the files were written.

#include "repo_fixture.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace portdiff_test {
namespace {

using nlohmann::json;

const char* const kBase = R"PY(import pytest


def test_shared():
    assert 1


class TestApi:
    def test_get(self):
        assert get()
)PY";

const char* const kSource = R"PY(import pytest

HELP = """
def test_only_in_a_string():
    pass
"""


def test_shared():
    assert 1


class TestApi:
    def test_get(self):
        assert get()

    @pytest.mark.slow
    async def test_lazy(self):
        assert await load()

    def test_source_only(self):
        pass
)PY";

const char* const kTarget = R"PY(import pytest


def test_shared():
    assert 1


class TestApi:
    def test_get(self):
        assert get(timeout=1)

    @pytest.mark.slow
    async def test_lazy(self):
        assert await load()

    def test_target_only(self):
        def test_nested():
            pass
)PY";

json run_json(const TempRepo& repo, const Ports& ports, std::vector<std::string> extra = {}) {
  // Options before the ranges: a repeatable option must not swallow them.
  std::vector<std::string> args = std::move(extra);
  for (const std::string& arg : {std::string("--repo"), repo.dir(), ports.source, ports.target,
                                 std::string("--format"), std::string("json")})
    args.push_back(arg);
  const CommandResult run = run_portdiff(args);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return json::parse(run.out);
}

TEST(TestFunctions, ComparesByQualifiedName) {
  TempRepo repo;
  const Ports ports =
      make_ports(repo, {{"tests/test_api.py", kBase}}, {{"tests/test_api.py", kSource}}, {},
                 {{"tests/test_api.py", kTarget}});
  const json report = run_json(repo, ports);
  ASSERT_EQ(report["test_files"].size(), 1u);
  const json& file = report["test_files"][0];
  EXPECT_EQ(file["path"], "tests/test_api.py");
  EXPECT_EQ(file["source_count"], 4);
  EXPECT_EQ(file["target_count"], 4);
  EXPECT_EQ(file["same_named"], 3);
  EXPECT_EQ(file["identical"], 2);  // test_shared, TestApi.test_lazy
  EXPECT_EQ(file["differing"], 1);  // TestApi.test_get
  EXPECT_EQ(file["only_source"], json::array({"TestApi.test_source_only"}));
  EXPECT_EQ(file["only_target"], json::array({"TestApi.test_target_only"}));

  std::map<std::string, json> functions;
  for (const json& f : file["functions"]) functions[f["name"].get<std::string>()] = f;
  EXPECT_EQ(functions.size(), 5u);
  EXPECT_EQ(functions["test_shared"]["source"], "untouched");
  EXPECT_EQ(functions["test_shared"]["same_body"], true);
  EXPECT_EQ(functions["TestApi.test_get"]["source"], "untouched");
  EXPECT_EQ(functions["TestApi.test_get"]["target"], "changed");
  EXPECT_EQ(functions["TestApi.test_get"]["same_body"], false);
  EXPECT_EQ(functions["TestApi.test_lazy"]["source"], "added");
  EXPECT_EQ(functions["TestApi.test_lazy"]["target"], "added");
  EXPECT_EQ(functions["TestApi.test_source_only"]["target"], "absent");
  EXPECT_EQ(functions["TestApi.test_source_only"]["same_body"], nullptr);
}

TEST(TestFunctions, FilesMatchingTheGlobsAtEitherHead) {
  TempRepo repo;
  const Ports ports = make_ports(repo, {{"checks/api_check.py", kBase}},
                                 {{"checks/api_check.py", kSource}, {"tests/test_new.py", kSource}},
                                 {}, {{"checks/api_check.py", kTarget}});
  // Defaults: api_check.py is no test file; test_new.py exists on the source side
  // only, so its functions are all source-only tests (P18).
  const json defaults = run_json(repo, ports)["test_files"];
  ASSERT_EQ(defaults.size(), 1u);
  EXPECT_EQ(defaults[0]["path"], "tests/test_new.py");
  EXPECT_EQ(defaults[0]["source_present"], true);
  EXPECT_EQ(defaults[0]["target_present"], false);
  EXPECT_GT(defaults[0]["source_count"], 0);
  EXPECT_EQ(defaults[0]["target_count"], 0);
  EXPECT_EQ(defaults[0]["only_source"].size(), defaults[0]["source_count"]);
  EXPECT_EQ(defaults[0]["same_named"], 0);
  const json report = run_json(repo, ports, {"--tests", "checks/*_check.py", "--tests", "x.py"});
  ASSERT_EQ(report["test_files"].size(), 1u);
  EXPECT_EQ(report["test_files"][0]["path"], "checks/api_check.py");
  EXPECT_EQ(report["test_files"][0]["differing"], 1);
}

}  // namespace
}  // namespace portdiff_test
