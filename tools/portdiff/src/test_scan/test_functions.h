#pragma once

#include "classify/classify.h"
#include "git_handle.h"
#include "options.h"
#include "ranges/range.h"

#include <string>
#include <vector>

namespace portdiff {

/// What a side's patch did to a test function: compared with that side's base.
enum class PatchEffect { absent, untouched, added, changed };

/// One test function name, as each side's head has it.
struct FunctionRow final {
  std::string name;  // qualified
  PatchEffect source = PatchEffect::absent;
  PatchEffect target = PatchEffect::absent;
  bool same_body = false;  // meaningful when present on both sides
};

/*
 * TestFileComparison: the test functions of one Python test file, compared by
 * qualified name between the two heads. `functions` holds every name found on
 * either side, in source-head order, then target-only names in target order.
 */
struct TestFileComparison final {
  std::string path;
  bool source_present = true;  // the file is at the source head (P18: one side may lack it)
  bool target_present = true;
  std::size_t source_count = 0;
  std::size_t target_count = 0;
  std::size_t same_named = 0;
  std::size_t identical = 0;
  std::size_t differing = 0;
  std::size_t only_source = 0;
  std::size_t only_target = 0;
  std::vector<FunctionRow> functions;
};

/// Whether `path` names a test file under `globs` (see Options::test_globs).
bool is_test_file(const std::string& path, const std::vector<std::string>& globs);

/// Stage 5 — scan test functions: for every file of the union that matches the
/// test globs and exists at either head, scans it at each head and each base; a
/// file at one head only gives that side's functions as unique to it (P18).
std::vector<TestFileComparison> compare_test_functions(git_repository* repo,
                                                       const ResolvedRange& source,
                                                       const ResolvedRange& target,
                                                       const std::vector<FileVerdict>& verdicts,
                                                       const Options& options);

}  // namespace portdiff
