#include "cli.h"

#include <CLI/CLI.hpp>

#include <map>

#include "error.h"

namespace portdiff {

std::optional<Options> parse_options(int argc, char** argv, std::ostream& out) {
  Options options;
  const std::map<std::string, Format> formats = {
      {"md", Format::markdown}, {"json", Format::json}, {"text", Format::text}};
  std::string format = "md";
  std::vector<std::string> test_globs;

  CLI::App app(
      "portdiff: compare one change ported to two branches, file by file, byte-exact.\n"
      "For each file in the union of both patches the added and deleted lines of each\n"
      "side are compared exactly: identical / different / only-source / only-target.",
      "portdiff");
  app.add_option("--repo", options.repo, "Repository (or a directory inside it)")
      ->type_name("DIR")
      ->capture_default_str();
  app.add_option("SOURCE", options.source,
                 "Source range: BASE..HEAD, BASE...HEAD (from the merge base) or a commit C "
                 "(meaning C^..C)")
      ->type_name("RANGE")
      ->required();
  app.add_option("TARGET", options.target, "Target range, same forms as SOURCE")
      ->type_name("RANGE")
      ->required();
  app.add_option("--format", format, "Report format: md (pull request), json, text (terminal)")
      ->type_name("FORMAT")
      ->check(CLI::IsMember({"md", "json", "text"}))
      ->capture_default_str();
  app.add_option("--output", options.output, "Write the report to FILE instead of stdout")
      ->type_name("FILE");
  app.add_option("--tests", test_globs,
                 "Glob naming Python test files (repeatable; replaces the defaults "
                 "test_*.py and *_test.py). Without '/' it matches the file name, with '/' "
                 "the whole path")
      ->type_name("GLOB")
      ->expected(1)  // one glob per --tests, so globs never swallow SOURCE/TARGET
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_flag("--find-renames", options.find_renames,
               "Pair deleted and added files as renames (default: a rename is a delete "
               "plus an add)");
  app.add_flag("--check", options.check, "Exit 1 when any file is not identical");
  app.footer(
      "Exit status: 0 report written; 1 with --check when some file is not identical;\n"
      "2 on any error (not a repository, unknown revision, empty range, bad usage),\n"
      "with a one-line message on stderr.\n"
      "Diff: libgit2 Myers with the indent heuristic, 0 context lines, every byte kept.\n"
      "Binary files compare blob ids; mode changes, renames and type changes are part\n"
      "of a file's change. See tools/portdiff/README.md for the rules and JSON schema.\n");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    throw Error(std::string("usage: ") + e.what() + " (see --help)");
  }
  options.format = formats.at(format);
  if (!test_globs.empty()) options.test_globs = test_globs;
  return options;
}

}  // namespace portdiff
