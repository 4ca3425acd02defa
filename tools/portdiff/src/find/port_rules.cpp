#include "find/port_rules.h"

#include "classify/classify.h"
#include "classify/realign.h"
#include "diff/collect.h"
#include "diff/side_diff.h"
#include "ranges/range.h"

#include <vector>

namespace portdiff {

bool names_in_trailer(const char* message, const std::string& commit_hex) {
  const std::string marker = "(cherry picked from commit ";
  const std::string text = message == nullptr ? "" : message;
  for (std::size_t at = text.find(marker); at != std::string::npos;
       at = text.find(marker, at + 1)) {
    const std::size_t start = at + marker.size();
    const std::size_t end = text.find(')', start);
    if (end == std::string::npos) break;
    const std::string named = text.substr(start, end - start);
    if (named.size() >= 7 && commit_hex.compare(0, named.size(), named) == 0) return true;
  }
  return false;
}

std::string bare_subject(std::string subject) {
  while (subject.size() > 1 && subject[0] == '[') {
    const std::size_t close = subject.find("] ");
    if (close == std::string::npos) break;
    subject.erase(0, close + 2);
  }
  const std::size_t open = subject.rfind(" (#");
  if (open != std::string::npos && subject.back() == ')') subject.erase(open);
  return subject;
}

std::set<std::string> paths_of(git_diff* diff) {
  std::set<std::string> paths;
  for (std::size_t i = 0; i < git_diff_num_deltas(diff); ++i) {
    const git_diff_delta* delta = git_diff_get_delta(diff, i);
    paths.insert(delta->old_file.path);
    paths.insert(delta->new_file.path);
  }
  return paths;
}

SidePatch report_patch(git_repository* repo, git_commit* commit, const Options& options) {
  ResolvedRange range;
  range.base = *git_commit_parent_id(commit, 0);
  range.head = *git_commit_id(commit);
  return collect_lines(repo, diff_range(repo, range, options).get());
}

bool same_changed_lines(git_repository* repo, const SidePatch& a, const SidePatch& b) {
  std::vector<FileVerdict> rows = classify(a, b);
  realign(repo, rows);
  for (const FileVerdict& row : rows)
    if (row.verdict != Verdict::identical) return false;
  return !rows.empty();
}

}  // namespace portdiff
