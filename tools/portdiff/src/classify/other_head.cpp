#include "classify/other_head.h"

#include "diff/content.h"

#include <optional>
#include <string_view>
#include <unordered_map>

namespace portdiff {
namespace {

/// The content of the file at `path` in `tree`, or nothing when absent.
std::optional<Content> file_at(git_repository* repo, git_tree* tree, const std::string& path) {
  git_tree_entry* raw = nullptr;
  const int found = git_tree_entry_bypath(&raw, tree, path.c_str());
  if (found == GIT_ENOTFOUND) return std::nullopt;
  check(found, "looking up " + path);
  TreeEntryPtr entry(raw);
  if (git_tree_entry_type(entry.get()) == GIT_OBJECT_TREE) return std::nullopt;
  return read_content(repo, git_tree_entry_filemode(entry.get()), *git_tree_entry_id(entry.get()));
}

/// How many of `lines` occur in `text` as whole lines, each line of `text` used once.
std::size_t lines_held(const LineSeq& lines, std::string_view text) {
  std::unordered_map<std::string_view, std::size_t> counts;
  for (std::size_t begin = 0; begin < text.size();) {
    std::size_t end = text.find('\n', begin);
    end = end == std::string_view::npos ? text.size() : end + 1;
    ++counts[text.substr(begin, end - begin)];
    begin = end;
  }
  std::size_t held = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto found = counts.find(lines.line(i));
    if (found != counts.end() && found->second > 0) {
      --found->second;
      ++held;
    }
  }
  return held;
}

}  // namespace

void describe_other_heads(git_repository* repo, const ResolvedRange& source,
                          const ResolvedRange& target, std::vector<FileVerdict>& rows) {
  TreePtr source_head, target_head;  // looked up on first use
  for (FileVerdict& row : rows) {
    if (row.verdict != Verdict::only_source && row.verdict != Verdict::only_target) continue;
    const bool source_only = row.verdict == Verdict::only_source;
    TreePtr& other = source_only ? target_head : source_head;
    if (!other) other = commit_tree(repo, source_only ? target.head : source.head);
    const FileChange& change = source_only ? *row.source : *row.target;
    const std::optional<Content> file = file_at(repo, other.get(), row.other_path);
    row.other_head.checked = true;
    row.other_head.exists = file.has_value();
    if (file && !change.binary) {
      row.other_head.held = lines_held(change.lines.added, file->text());
      row.other_head.held_deleted = lines_held(change.lines.deleted, file->text());
    }
  }
}

}  // namespace portdiff
