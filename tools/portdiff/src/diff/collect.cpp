#include "diff/collect.h"

#include "diff/content.h"
#include "diff/diff_rule.h"

#include <mutex>
#include <utility>

namespace portdiff {
namespace {

ChangeKind kind_of(git_delta_t status) {
  switch (status) {
    case GIT_DELTA_ADDED:
      return ChangeKind::added;
    case GIT_DELTA_DELETED:
      return ChangeKind::deleted;
    case GIT_DELTA_RENAMED:
      return ChangeKind::renamed;
    case GIT_DELTA_TYPECHANGE:
      return ChangeKind::typechange;
    default:
      return ChangeKind::modified;
  }
}

bool is_regular(std::uint32_t mode) {
  return mode == GIT_FILEMODE_BLOB || mode == GIT_FILEMODE_BLOB_EXECUTABLE;
}

/*
 * Note [Large files one at a time]
 * The sides of a report are collected concurrently (pipeline.cpp), each holding, for
 * the file it diffs, both ends and xdiff's tables: about what one `git diff -U0` of
 * that file holds. For a large file two sides at once held twice that (P29: 510 MiB
 * for a 50 MB file, git 262 MiB). So a file with an end of kLargeEndBytes or more
 * is read and diffed under one process-wide lock: large files go one at a time,
 * small ones in parallel. A side that finds the lock taken drops the ends it has
 * read, waits, and reads them again (an object header would tell the size before
 * the read, but reading one per end cost the 5,000-file report a third more time).
 * And main() fixes glibc's mmap threshold at 4 MiB: by default a freed mapped block
 * raises the threshold to its size (up to 32 MiB), so the next file's ends and
 * tables come from the heap, where freed memory stays resident and another
 * thread's arena cannot reuse it (a 24 MiB file: 240 MiB with a lock alone,
 * 135 MiB with both; git 125 MiB).
 */
constexpr std::size_t kLargeEndBytes = std::size_t{8} << 20;
std::mutex large_file_lock;

/// The two ends of a text change, read for its diff; `large` holds the lock
/// while they are large (Note [Large files one at a time]).
struct Ends final {
  Content old_end;
  Content new_end;
  std::unique_lock<std::mutex> large{large_file_lock, std::defer_lock};
};

Ends read_ends(git_repository* repo, const FileChange& change) {
  Ends ends;
  // False when an end is large and another side holds the lock.
  const auto admitted = [&](const Content& end) {
    return ends.large.owns_lock() || end.text().size() < kLargeEndBytes || ends.large.try_lock();
  };
  const auto read_both = [&] {
    ends.old_end = read_content(repo, change.old_mode, change.old_id);
    if (!admitted(ends.old_end)) return false;
    ends.new_end = read_content(repo, change.new_mode, change.new_id);
    return admitted(ends.new_end);
  };
  if (!read_both()) {
    ends = Ends();  // wait without holding them
    ends.large.lock();
    read_both();  // with the lock held, always admitted
  }
  return ends;
}

}  // namespace

SidePatch collect_lines(git_repository* repo, git_diff* diff) {
  const std::size_t deltas = git_diff_num_deltas(diff);
  SidePatch files;
  files.reserve(deltas);
  for (std::size_t i = 0; i < deltas; ++i) {
    const git_diff_delta* delta = git_diff_get_delta(diff, i);
    FileChange& change = files.emplace_back();
    change.kind = kind_of(delta->status);
    change.path = delta->status == GIT_DELTA_DELETED ? delta->old_file.path : delta->new_file.path;
    change.old_path = delta->old_file.path;
    change.old_mode = delta->old_file.mode;
    change.new_mode = delta->new_file.mode;
    change.old_id = delta->old_file.id;
    change.new_id = delta->new_file.id;
    if (change.kind != ChangeKind::typechange && git_oid_equal(&change.old_id, &change.new_id))
      continue;  // a mode-only change has no lines

    // Both ends come from the object database: a work tree, its attributes and its
    // filters cannot change what a report pinned to SHAs says.
    Ends ends = read_ends(repo, change);
    const std::string_view old_text = ends.old_end.text(), new_text = ends.new_end.text();
    change.binary = (is_regular(change.old_mode) && looks_binary(old_text)) ||
                    (is_regular(change.new_mode) && looks_binary(new_text));
    if (change.binary) continue;
    switch (change.kind) {
      case ChangeKind::added:
        push_all_lines(new_text, '+', change.lines);
        break;
      case ChangeKind::deleted:
        push_all_lines(old_text, '-', change.lines);
        break;
      case ChangeKind::typechange:  // git shows a deletion of one type and an addition of the other
        push_all_lines(old_text, '-', change.lines);
        push_all_lines(new_text, '+', change.lines);
        break;
      case ChangeKind::modified:
      case ChangeKind::renamed:
        change.lines = read_git(std::move(ends.old_end), std::move(ends.new_end));
        break;
    }
  }
  return files;
}

}  // namespace portdiff
