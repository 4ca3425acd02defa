#pragma once

#include "diff/file_change.h"
#include "options.h"

#include <string>
#include <vector>

namespace portdiff {

enum class Verdict { identical, different, only_source, only_target };

/// Why a file both patches touch is `different`: the first of these that holds.
/// The line-level reasons name the smallest normalisation under which the two
/// patches would agree (each includes the ones before it), so a reviewer knows
/// at once whether a port differs in substance or only in bytes.
enum class Difference {
  none,
  kind,                 // added / deleted / modified / renamed / type change differs
  rename_origin,        // renamed from different paths
  binary,               // a binary file whose blob pair differs, or binary on one side only
  final_newline,        // equal once every line ends in '\n'
  line_endings,         // ... and CRLF is read as LF
  trailing_whitespace,  // ... and trailing blanks are dropped
  lines,                // the lines really differ
  mode,                 // equal content, but the patches change the mode differently
};

/// How a row's two sides were paired: by the same path, by a --map-path rule, or
/// (an only-source row and an only-target row) by their changed lines.
enum class Pairing { path, mapped, content };

/// What the other head holds for an only-source or only-target row (P23).
struct OtherHead final {
  bool checked = false;          // set by describe_other_heads
  bool exists = false;           // the file is at the other head
  std::size_t held = 0;          // of this side's added lines, how many the other file holds
  std::size_t held_deleted = 0;  // of its deleted lines, how many the other file still has (P33)
};

/// How big a `different` row's difference is (P20), from the interdiff of its lines.
struct DifferenceSize final {
  bool known = false;           // false for binary rows
  std::size_t common = 0;       // lines both patches have
  std::size_t source_only = 0;  // lines only the source patch has
  std::size_t target_only = 0;
};

/*
 * Stage 4 — classify. FileVerdict is one row of the report: a path of the union of
 * both patches, its verdict, and non-owning pointers to each side's FileChange
 * (null where that side does not touch the file; they point into the SidePatches
 * passed to classify(), which must outlive the verdicts).
 */
struct FileVerdict final {
  std::string path;         // the target's path where both sides touch the file
  std::string source_path;  // the source's own path (differs when mapped or paired)
  // For an only-source (only-target) row: where the file would be at the target
  // (source) head, after --map-path.
  std::string other_path;
  Pairing pairing = Pairing::path;
  OtherHead other_head;
  DifferenceSize size;
  Verdict verdict = Verdict::identical;
  Difference difference = Difference::none;
  bool final_equal = false;  // blobs and modes at the two heads; only when both touch it
  // Identical by the region reading although git's readings differ (stage realign,
  // Note [Stable diff rule]); the region reading's counts, equal on both sides.
  bool by_region = false;
  std::size_t region_added = 0;
  std::size_t region_deleted = 0;
  // For an identical row whose final files differ: how (stage final_files), from
  // git's -U0 reading of the source head's file (-) against the target head's (+):
  // "+1/-1 between final files: blank lines only", or "...: first" followed by
  // the first deleted and added lines as excerpts (excerpt.h).
  std::string final_note;
  std::vector<std::string> final_excerpts;
  const FileChange* source = nullptr;
  const FileChange* target = nullptr;
};

/// Per-class counts over the union.
struct Totals final {
  std::size_t files = 0;
  std::size_t source_files = 0;
  std::size_t target_files = 0;
  std::size_t identical = 0;
  std::size_t identical_final_equal = 0;
  std::size_t different = 0;
  std::size_t only_source = 0;
  std::size_t only_target = 0;
};

/// Compares two changes to the same path (the rule of the README's "Rules"). A mode is
/// compared as a change: a mode that neither patch changed belongs to the
/// baseline (a final-file note), and line differences are named before mode ones.
Difference compare_changes(const FileChange& source, const FileChange& target);

/// Whether the two patches changed the file's mode differently (one did, the
/// other did not, or to other modes).
bool mode_changes_differ(const FileChange& source, const FileChange& target);

/// Verdicts for the union of both patches, sorted by path (byte order). Source
/// paths go through `maps` first; then an only-source row and an only-target row
/// of the same file name whose changed lines are identical, or share at least
/// half of their lines, become one row (Pairing::content), best matches first.
std::vector<FileVerdict> classify(const SidePatch& source, const SidePatch& target,
                                  const std::vector<PathMap>& maps = {});

/// `path` through the first map whose `from` side covers it (the path itself or a
/// directory above it); unchanged when none does. `to_target` picks the direction.
std::string map_path(const std::string& path, const std::vector<PathMap>& maps, bool to_target);

Totals count(const std::vector<FileVerdict>& verdicts);

}  // namespace portdiff
