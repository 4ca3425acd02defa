// The test-function scanner on its own: hand-written expectations for each tricky
// construct, and Python's own `ast` module as an independent oracle on one file
// that combines them.

#include "test_scan/python_scan.h"

#include "repo_fixture.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace portdiff_test {
namespace {

using portdiff::scan_test_functions;

std::map<std::string, std::string> scan(const std::string& source) {
  std::map<std::string, std::string> by_name;
  for (const auto& f : scan_test_functions(source)) by_name[f.qualified_name] = f.body;
  return by_name;
}

const char* const kTricky = R"PY(import pytest

TEMPLATE = """
def test_in_triple_string():
    pass
"""
OTHER = 'def test_in_string(): pass'
# def test_in_comment(): pass


@pytest.mark.parametrize("x", [
    1,
    2,
])
@pytest.mark.slow
def test_decorated(x):
    assert x


async def test_async():
    await thing()


def test_with_nested():
    def test_inner():
        pass
    class TestInsideFunction:
        def test_hidden(self):
            pass
    return test_inner

    # trailing comment, not part of the body


class TestOuter:
    """def test_in_docstring(): pass"""

    def helper(self):
        text = "\
def test_continued_string(): pass"

    def test_method(self):
        x = (1,
def_like := 2)
        return x

    class TestInner:
        @staticmethod
        async def test_inner_async():
            pass

    def test_last(self): return 1


def test_backslash():
    total = 1 + \
        2
    return total
def test_redefined():
    return 1


def test_redefined():
    return 2
)PY";

TEST(PythonScan, FindsTheRightNames) {
  const auto found = scan(kTricky);
  std::vector<std::string> names;
  for (const auto& entry : scan_test_functions(kTricky)) names.push_back(entry.qualified_name);
  const std::vector<std::string> expected = {"test_decorated",
                                             "test_async",
                                             "test_with_nested",
                                             "TestOuter.test_method",
                                             "TestOuter.TestInner.test_inner_async",
                                             "TestOuter.test_last",
                                             "test_backslash",
                                             "test_redefined"};
  EXPECT_EQ(names, expected);
}

TEST(PythonScan, BodiesRunFromFirstDecoratorToLastCodeLine) {
  const auto found = scan(kTricky);
  EXPECT_EQ(found.at("test_decorated"),
            "@pytest.mark.parametrize(\"x\", [\n    1,\n    2,\n])\n@pytest.mark.slow\n"
            "def test_decorated(x):\n    assert x\n");
  EXPECT_EQ(found.at("test_with_nested"),
            "def test_with_nested():\n    def test_inner():\n        pass\n"
            "    class TestInsideFunction:\n        def test_hidden(self):\n"
            "            pass\n    return test_inner\n");
  EXPECT_EQ(found.at("TestOuter.test_last"), "    def test_last(self): return 1\n");
  EXPECT_EQ(found.at("test_redefined"), "def test_redefined():\n    return 2\n");
}

TEST(PythonScan, KeepsMissingFinalNewlineAndCrlf) {
  EXPECT_EQ(scan("def test_a():\r\n    pass\r\n").at("test_a"), "def test_a():\r\n    pass\r\n");
  EXPECT_EQ(scan("def test_a():\n    pass").at("test_a"), "def test_a():\n    pass");
}

TEST(PythonScan, IgnoresNonTestNamesAndLookalikes) {
  EXPECT_TRUE(scan("def helper():\n    pass\ndefine = 1\nclass_ = 2\n"
                   "x = \"\"\"\ndef test_x(): pass\n\"\"\"\n")
                  .empty());
}

TEST(PythonScan, AgreesWithPythonAst) {
  if (std::system("python3 -c 'import ast, sys; sys.exit(0 if sys.version_info >= (3, 8) else 1)'"
                  " >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 >= 3.8 is not available";
  namespace fs = std::filesystem;
  const fs::path file = fs::temp_directory_path() / "portdiff_scan_oracle.py";
  std::ofstream(file, std::ios::binary) << kTricky;
  // For each test function that pytest would collect: name, then the source lines
  // from its first decorator to ast's end_lineno, NUL-separated.
  const char* oracle = R"(
import ast, sys
src = open(sys.argv[1], 'rb').read()
lines = src.splitlines(keepends=True)
found = {}
def walk(body, prefix):
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name.startswith('test'):
                start = min([d.lineno for d in node.decorator_list] + [node.lineno])
                found[prefix + node.name] = b''.join(lines[start - 1:node.end_lineno])
        elif isinstance(node, ast.ClassDef):
            walk(node.body, prefix + node.name + '.')
walk(ast.parse(src).body, '')
for name, body in found.items():
    sys.stdout.buffer.write(name.encode() + b'\0' + body + b'\0')
)";
  const CommandResult run =
      run_command("python3 -c " + shell_quote(oracle) + " " + shell_quote(file.string()));
  fs::remove(file);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::map<std::string, std::string> expected;
  std::size_t pos = 0;
  while (pos < run.out.size()) {
    const std::size_t name_end = run.out.find('\0', pos);
    const std::size_t body_end = run.out.find('\0', name_end + 1);
    expected[run.out.substr(pos, name_end - pos)] =
        run.out.substr(name_end + 1, body_end - name_end - 1);
    pos = body_end + 1;
  }
  EXPECT_EQ(scan(kTricky), expected);
}

}  // namespace
}  // namespace portdiff_test
