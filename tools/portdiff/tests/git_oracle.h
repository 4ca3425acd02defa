#pragma once

#include "repo_fixture.h"

#include <map>
#include <string>
#include <vector>

namespace portdiff_test {

/*
 * The reference the tests check portdiff against, computed from the git CLI and
 * never from portdiff: `git diff -U0 --full-index` output parsed byte for byte
 * (hunk headers give the line counts, "\ No newline at end of file" removes the
 * preceding line's '\n'), and `git ls-tree` at the heads for the final files.
 */
struct OraclePatchFile final {
  std::string kind = "modified";  // added, deleted, modified, renamed
  std::string old_path;
  std::string old_mode, new_mode;
  std::string old_id, new_id;
  bool binary = false;
  std::vector<std::string> added, deleted;
};

struct OracleRow final {
  std::string verdict;  // identical, different, only-source, only-target
  long source_added = -1, source_deleted = -1, target_added = -1, target_deleted = -1;
  bool both = false;
  bool final_equal = false;  // when both touch the file
};

/// One side's patch by path (new path; old path for deletions).
std::map<std::string, OraclePatchFile> oracle_patch(const TempRepo& repo, const std::string& range,
                                                    bool find_renames);

/// The rule of the README's "Rules", applied to two oracle patches.
std::map<std::string, OracleRow> oracle_classify(const TempRepo& repo, const Ports& ports,
                                                 bool find_renames);

/// `git cherry -v UPSTREAM HEAD LIMIT`: each listed commit and its sign ('-': an
/// equivalent patch is in UPSTREAM; '+': none).
std::map<std::string, char> git_cherry(const TempRepo& repo, const std::string& upstream,
                                       const std::string& head, const std::string& limit);

}  // namespace portdiff_test
