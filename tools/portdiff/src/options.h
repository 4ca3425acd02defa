#pragma once

#include <string>
#include <vector>

namespace portdiff {

/// `--map-path OLD=NEW`: source paths at or under OLD compare with target paths at
/// or under NEW (a directory moved between the branches).
struct PathMap final {
  std::string source;  // OLD
  std::string target;  // NEW
};

enum class Format { markdown, json, text };
enum class Color { automatic, always, never };

/*
 * Options: everything the command line can set, with its defaults. cli.cpp fills
 * it; every stage reads only the fields it needs. Plain value type.
 */
struct Options final {
  std::string repo = ".";
  std::string source;                      // `BASE..HEAD`, `BASE...HEAD` or a single commit `C`
  std::vector<std::string> targets;        // one target: a pair report; several: a matrix
  std::vector<std::string> target_labels;  // names for the targets (find: branches); may be empty
  std::vector<bool> target_hints;   // find --report --hints: that target is a same-subject hint
  std::vector<std::string> labels;  // --label SOURCE_NAME TARGET_NAME: empty or two names
  Format format = Format::markdown;
  std::string output;  // empty or "-": standard output
  // Globs naming the Python test files whose test functions are compared. A glob
  // without '/' matches the file name, one with '/' the whole path.
  std::vector<std::string> test_globs = {"test_*.py", "*_test.py"};
  bool find_renames = false;
  std::vector<PathMap> path_maps;
  bool check = false;              // exit 1 when any file is not identical
  bool brief = false;              // only the verdict line and the rows that are not identical
  Color color = Color::automatic;  // text format only; NO_COLOR turns `automatic` off

  // `portdiff find COMMIT --branches GLOB...`: set when that subcommand was given.
  bool find = false;
  std::string find_commit;
  std::vector<std::string> branch_globs;
  bool find_report = false;  // compare the ports found (a matrix report)
  bool find_hints = false;   // --hints: --report also compares a branch's same-subject hint

  // `portdiff audit SOURCE_RANGE --onto TARGET...`: set when that subcommand was
  // given; the range is `source`, and --hints is `find_hints`.
  bool audit = false;
  std::vector<std::string> onto;
};

}  // namespace portdiff
