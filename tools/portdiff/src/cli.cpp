#include "cli.h"

#include "error.h"

#include <CLI/CLI.hpp>

#include <map>

namespace portdiff {
namespace {

/// -h/--help anywhere before a `--` wins over every other problem on the line,
/// so `portdiff -h --format xml` prints the help instead of a usage error.
bool asks_for_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") return false;
    if (arg == "-h" || arg == "--help") return true;
  }
  return false;
}

/// `OLD=NEW` into a PathMap; a trailing '/' on either side is dropped.
PathMap parse_path_map(const std::string& text) {
  const std::size_t equals = text.find('=');
  PathMap map;
  if (equals != std::string::npos) {
    map.source = text.substr(0, equals);
    map.target = text.substr(equals + 1);
  }
  for (std::string* side : {&map.source, &map.target})
    while (side->size() > 1 && side->back() == '/') side->pop_back();
  if (map.source.empty() || map.target.empty())
    throw Error("usage: --map-path '" + text + "': expected OLD=NEW, two paths (see --help)");
  return map;
}

void add_report_options(CLI::App& app, Options& options, std::string& format, std::string& color,
                        std::vector<std::string>& test_globs, std::vector<std::string>& path_maps) {
  app.add_option("--repo", options.repo, "Repository (or a directory inside it)")
      ->type_name("DIR")
      ->capture_default_str();
  app.add_option("--format", format, "Report format: md (pull request), json, text (terminal)")
      ->type_name("FORMAT")
      ->check(CLI::IsMember({"md", "json", "text"}))
      ->capture_default_str();
  app.add_option("--output", options.output,
                 "Write the report to FILE instead of stdout ('-' is stdout)")
      ->type_name("FILE");
  app.add_option("--tests", test_globs,
                 "Glob naming Python test files (repeatable; replaces the defaults "
                 "test_*.py and *_test.py). Without '/' it matches the file name, with '/' "
                 "the whole path")
      ->type_name("GLOB")
      ->expected(1)  // one glob per --tests, so globs never swallow the ranges
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--map-path", path_maps,
                 "Compare source paths at or under OLD with target paths at or under NEW "
                 "(a directory moved between the branches); repeatable")
      ->type_name("OLD=NEW")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_flag("--find-renames", options.find_renames,
               "Pair deleted and added files as renames (default: a rename is a delete "
               "plus an add)");
  app.add_flag("--check", options.check, "Exit 1 when any file is not identical");
  app.add_flag("--brief", options.brief,
               "Print only the verdict line and the rows that are not identical");
  app.add_option("--color", color,
                 "Colour the text format: auto (on a terminal, unless NO_COLOR is set), "
                 "always, never")
      ->type_name("WHEN")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
}

}  // namespace

std::optional<Options> parse_options(int argc, char** argv, std::string& help) {
  Options options;
  const std::map<std::string, Format> formats = {
      {"md", Format::markdown}, {"json", Format::json}, {"text", Format::text}};
  const std::map<std::string, Color> colors = {
      {"auto", Color::automatic}, {"always", Color::always}, {"never", Color::never}};
  std::string format = "md";
  std::string color = "auto";
  std::vector<std::string> test_globs, path_maps;

  CLI::App app(
      "portdiff: compare one change ported to other branches, file by file, byte-exact.\n"
      "For each file in the union of the patches the added and deleted lines of each\n"
      "side are compared exactly: identical / different / only-source / only-target.\n"
      "With several TARGETs: one matrix of files x targets.",
      "portdiff");
  add_report_options(app, options, format, color, test_globs, path_maps);
  app.add_option("--label", options.labels,
                 "Names for the two sides in the report (default: their branches when known, "
                 "else the ranges as given)")
      ->type_name("NAME")
      ->expected(2);
  app.add_option("SOURCE", options.source,
                 "Source range: BASE..HEAD, BASE...HEAD (from the merge base) or a commit C "
                 "(meaning C^..C)")
      ->type_name("RANGE");
  app.add_option("TARGET", options.targets,
                 "Target range(s), same forms as SOURCE; several give a matrix")
      ->type_name("RANGE");

  CLI::App* find = app.add_subcommand(
      "find",
      "Find the ports of COMMIT (a merge: against its first parent) on branches:\n"
      "commits whose message says \"(cherry picked from commit <COMMIT>)\", whose\n"
      "stable patch-id equals COMMIT's, whose changed lines are identical by the\n"
      "report's rule, or (a hint) with COMMIT's subject. With --report, compare them.");
  find->add_option("COMMIT", options.find_commit, "The original commit")
      ->type_name("COMMIT")
      ->required();
  find->add_option("--branches", options.branch_globs,
                   "Branch glob(s) to search, local or remote-tracking (e.g. 'release/*', "
                   "'origin/release-*'); repeatable")
      ->type_name("GLOB")
      ->required();
  find->add_flag("--report", options.find_report,
                 "Compare COMMIT with every port found (a branch with only a same-subject "
                 "hint is listed, not compared)");
  find->add_flag("--hints", options.find_hints,
                 "With --report, also compare a branch's same-subject hint, labelled a hint");
  std::string find_format = "md", find_color = "auto";
  std::vector<std::string> find_globs, find_maps;
  add_report_options(*find, options, find_format, find_color, find_globs, find_maps);

  CLI::App* audit = app.add_subcommand(
      "audit",
      "Audit a whole branch: every commit of SOURCE_RANGE (merges aside) looked up on\n"
      "each TARGET by find's rules among the target's commits since it forked, its port\n"
      "compared by the pair report's rules: identical / different / not ported /\n"
      "contained; then the target's commits with no source in the range (as git cherry -v).");
  audit->add_option("SOURCE_RANGE", options.source, "The source commits: BASE..HEAD or BASE...HEAD")
      ->type_name("RANGE")
      ->required();
  audit->add_option("--onto", options.onto, "Target branch(es) or revisions; repeatable")
      ->type_name("TARGET")
      ->required();
  audit->add_flag(
      "--hints", options.find_hints,
      "Also compare a commit's same-subject hint where it has no port, labelled a hint");
  std::string audit_format = "md", audit_color = "auto";
  std::vector<std::string> audit_globs, audit_maps;
  add_report_options(*audit, options, audit_format, audit_color, audit_globs, audit_maps);

  app.footer(
      "Exit status: 0 report written; 1 with --check when some file is not identical;\n"
      "2 on any error (not a repository, unknown revision, empty range, bad usage,\n"
      "a write error), with a one-line message on stderr; 3 from find or audit in a\n"
      "shallow clone whose boundary cut the search short (the report says where).\n"
      "Diff: git's -U0 reading (Myers, indent heuristic, 0 context), every byte kept;\n"
      "the verdict also accepts the region reading, so it never hinges on tie-breaking.\n"
      "See tools/portdiff/README.md for the rules and the JSON schema.\n");

  if (asks_for_help(argc, argv)) {
    help = app.help();
    for (int i = 1; i < argc; ++i) {
      if (std::string(argv[i]) == "find") help = find->help();
      if (std::string(argv[i]) == "audit") help = audit->help();
    }
    return std::nullopt;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    throw Error(std::string("usage: ") + e.what() + " (see --help)");
  }
  options.find = find->parsed();
  options.audit = audit->parsed();
  if (options.audit) {
    format = audit_format;
    color = audit_color;
    if (!audit_globs.empty()) test_globs = audit_globs;
    if (!audit_maps.empty()) path_maps = audit_maps;
    if (options.source.find("..") == std::string::npos)
      throw Error("usage: SOURCE_RANGE '" + options.source +
                  "': expected BASE..HEAD or BASE...HEAD, the commits to audit (see --help)");
  } else if (options.find) {
    format = find_format;
    color = find_color;
    if (!find_globs.empty()) test_globs = find_globs;
    if (!find_maps.empty()) path_maps = find_maps;
    if (options.find_hints && !options.find_report)
      throw Error("usage: --hints only says what --report compares; give --report (see --help)");
  } else {
    if (options.source.empty()) throw Error("usage: SOURCE is required (see --help)");
    if (options.targets.empty()) throw Error("usage: TARGET is required (see --help)");
    for (const std::string& label : options.labels)
      if (label.empty()) throw Error("usage: --label: a name must not be empty (see --help)");
    if (!options.labels.empty() && options.targets.size() != 1)
      throw Error(
          "usage: --label names a source and one target; a matrix names its targets "
          "by their branches (see --help)");
  }
  options.format = formats.at(format);
  options.color = colors.at(color);
  if (!test_globs.empty()) options.test_globs = test_globs;
  for (const std::string& map : path_maps) options.path_maps.push_back(parse_path_map(map));
  return options;
}

}  // namespace portdiff
