#include "diff/side_diff.h"

namespace portdiff {

void limit_to_paths(git_diff_options& options, const std::set<std::string>& paths,
                    std::vector<char*>& storage) {
  storage.clear();
  for (const std::string& path : paths) storage.push_back(const_cast<char*>(path.c_str()));
  options.pathspec.strings = storage.data();
  options.pathspec.count = storage.size();
  options.flags |= GIT_DIFF_DISABLE_PATHSPEC_MATCH;
}

DiffPtr diff_range(git_repository* repo, const ResolvedRange& range, const Options& options,
                   const std::set<std::string>* paths) {
  TreePtr base = commit_tree(repo, range.base);
  TreePtr head = commit_tree(repo, range.head);

  git_diff_options diff_options;
  check(git_diff_options_init(&diff_options, GIT_DIFF_OPTIONS_VERSION), "diff options");
  // Only the list of deltas is taken from libgit2's tree diff; collect_lines reads
  // the blobs itself, so libgit2's attribute-driven binary check is skipped.
  diff_options.flags = GIT_DIFF_NORMAL | GIT_DIFF_INCLUDE_TYPECHANGE | GIT_DIFF_SKIP_BINARY_CHECK;
  std::vector<char*> exact;
  if (paths != nullptr) limit_to_paths(diff_options, *paths, exact);

  git_diff* raw = nullptr;
  check(git_diff_tree_to_tree(&raw, repo, base.get(), head.get(), &diff_options),
        "diffing " + range.spec);
  DiffPtr diff(raw);

  if (options.find_renames) {
    git_diff_find_options find_options;
    check(git_diff_find_options_init(&find_options, GIT_DIFF_FIND_OPTIONS_VERSION),
          "rename options");
    find_options.flags = GIT_DIFF_FIND_RENAMES;
    check(git_diff_find_similar(diff.get(), &find_options), "finding renames in " + range.spec);
  }
  return diff;
}

}  // namespace portdiff
