#pragma once

#include <git2.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace portdiff {

/*
 * LineSeq: an ordered sequence of patch lines, stored as one byte buffer plus the
 * end offset of each line. Each line keeps every byte libgit2 reports, including
 * its '\n' — or the lack of one on a file's last line, which is how "\ No newline
 * at end of file" shows up. Two sequences are equal exactly when the buffers and
 * the line boundaries are.
 */
class LineSeq final {
 public:
  void push(const char* bytes, std::size_t length) {
    bytes_.append(bytes, length);
    ends_.push_back(bytes_.size());
  }
  std::size_t size() const { return ends_.size(); }
  std::string_view line(std::size_t i) const {
    const std::size_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(bytes_).substr(begin, ends_[i] - begin);
  }
  bool operator==(const LineSeq& other) const {
    return ends_ == other.ends_ && bytes_ == other.bytes_;
  }
  bool operator!=(const LineSeq& other) const { return !(*this == other); }

 private:
  std::string bytes_;
  std::vector<std::size_t> ends_;
};

/// The lines of one file's patch: added and deleted lines, and their patch order
/// (one '-' or '+' per line, as the patch lists them) so that the first difference
/// between two patches can be found in reading order. Each line keeps its place
/// (1-based): an added line's number in the new file, a deleted line's in the old
/// one, as `git diff -U0`'s hunk headers count them (P30: where the sides differ).
struct PatchLines final {
  LineSeq added;
  LineSeq deleted;
  std::string order;
  std::vector<std::uint32_t> added_at;
  std::vector<std::uint32_t> deleted_at;

  void push(char origin, const char* bytes, std::size_t length, std::uint32_t line_number) {
    (origin == '+' ? added : deleted).push(bytes, length);
    (origin == '+' ? added_at : deleted_at).push_back(line_number);
    order.push_back(origin);
  }
  bool operator==(const PatchLines& other) const {
    // The rule compares the two sequences (the README's "Rules"); order only guides the display.
    return added == other.added && deleted == other.deleted;
  }
  bool operator!=(const PatchLines& other) const { return !(*this == other); }
};

enum class ChangeKind { added, deleted, modified, renamed, typechange };

/*
 * FileChange: what one side's patch does to one file — its header (kind, modes,
 * blob ids, rename origin, binary) and its added and deleted lines in patch order.
 * `path` is the file's path at head (at base for a deletion) and keys the union of
 * the two patches. Binary files and submodules carry no lines; their change is the
 * pair of blob ids. Lines follow git's -U0 reading (diff_rule.h).
 */
struct FileChange final {
  std::string path;
  std::string old_path;  // equals `path` unless renamed
  ChangeKind kind = ChangeKind::modified;
  std::uint32_t old_mode = 0;  // 0 when the file does not exist on that end
  std::uint32_t new_mode = 0;
  git_oid old_id{};
  git_oid new_id{};  // zero for a deletion
  bool binary = false;
  PatchLines lines;
};

/// One side's patch: every file it touches, in libgit2's (path) order.
using SidePatch = std::vector<FileChange>;

}  // namespace portdiff
