#include "find/changed_line_sum.h"

#include "git_handle.h"

#include <functional>
#include <string_view>

namespace portdiff {

void ChangedLineSum::add(git_patch* patch) {
  if (git_patch_get_delta(patch)->flags & GIT_DIFF_FLAG_BINARY) {
    complete_ = false;
    return;
  }
  const std::hash<std::string_view> hash;
  for (std::size_t h = 0; h < git_patch_num_hunks(patch); ++h) {
    const int lines = check(git_patch_num_lines_in_hunk(patch, h), "reading a patch");
    for (int l = 0; l < lines; ++l) {
      const git_diff_line* line = nullptr;
      check(git_patch_get_line_in_hunk(&line, patch, h, static_cast<std::size_t>(l)),
            "reading a patch");
      // Every byte of the line, its '\n' included where it has one, as the report keeps it.
      const std::uint64_t value = hash(std::string_view(line->content, line->content_len));
      if (line->origin == GIT_DIFF_LINE_ADDITION) sum_ += value;
      if (line->origin == GIT_DIFF_LINE_DELETION) sum_ -= value;
    }
  }
}

}  // namespace portdiff
