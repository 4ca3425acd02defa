#pragma once

#include <string>
#include <vector>

namespace portdiff {

enum class Format { markdown, json, text };

/*
 * Options: everything the command line can set, with its defaults. cli.cpp fills
 * it; every stage reads only the fields it needs. Plain value type.
 */
struct Options final {
  std::string repo = ".";
  std::string source;  // `BASE..HEAD`, `BASE...HEAD` or a single commit `C`
  std::string target;
  Format format = Format::markdown;
  std::string output;  // empty: standard output
  // Globs naming the Python test files whose test functions are compared. A glob
  // without '/' matches the file name, one with '/' the whole path.
  std::vector<std::string> test_globs = {"test_*.py", "*_test.py"};
  bool find_renames = false;
  bool check = false;  // exit 1 when any file is not identical
};

}  // namespace portdiff
