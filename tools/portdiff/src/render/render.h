#pragma once

#include "options.h"
#include "render/excerpt.h"
#include "report.h"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace portdiff {

/// Stage 6 — render. Each format lives in its own file; all three read the same
/// Report and share the vocabulary below, so the words match across formats.
/// `options.brief` keeps the verdict line and the rows that are not identical;
/// `options.color` (text only) is `always` or `never` here, resolved by main.
std::string render_markdown(const Report& report, const Options& options);
std::string render_json(const Report& report, const Options& options);
std::string render_text(const Report& report, const Options& options);

/// Section 4 of a Markdown report, shared by the pair report and the matrix: the
/// sentence that explains the test-function tables, and one test file's summary
/// and table under `heading` (P22).
extern const char* const test_functions_preamble;
std::string markdown_test_file(const TestFileComparison& file, const std::string& heading);

const char* verdict_name(Verdict verdict);                  // "identical", "only-source", ...
const char* difference_name(Difference difference);         // "final-newline", ... ("" for none)
const char* difference_description(Difference difference);  // a short phrase for people
const char* kind_name(ChangeKind kind);                     // "added", "renamed", ...
const char* effect_name(PatchEffect effect);                // "added", "changed", ...

/// "1 file", "2 files": a count and its noun, singular or plural.
std::string plural(std::size_t n, const std::string& noun);

/// Columns a UTF-8 string takes in a terminal: two for a wide or fullwidth
/// character (East Asian Width W or F: CJK, emoji), none for a combining mark,
/// a zero-width joiner or a variation selector, one for any other code point
/// (case P45; the tests check it against Python's unicodedata).
std::size_t display_width(const std::string& text);

/// The longest prefix of `text` that takes at most `width` columns, cut between
/// code points (never inside a UTF-8 sequence).
std::string cut_to_width(const std::string& text, std::size_t width);

/// Code points in a UTF-8 string (each invalid byte counts one).
std::size_t character_count(const std::string& text);

/// A git file mode as git prints it: "100644".
std::string octal_mode(std::uint32_t mode);

/// `+added/-deleted` for one side, or "binary".
std::string counts(const FileChange& change);

/// How a format shows a name (a path) inside a note: quoted, and for Markdown
/// also as inline code.
using NameStyle = std::function<std::string(const std::string&)>;

/// Header notes a reviewer needs beside the counts: new/deleted file, rename
/// origin, mode change, type change (empty when none).
std::string header_notes(const FileChange& change, const NameStyle& name);

/// How a row's sides were paired when not by the same path: "source path `a`
/// (--map-path)", "paired by content with source `a`" (P17); "" otherwise.
std::string pairing_note(const FileVerdict& row, const NameStyle& name);

/// For an only-source/only-target row, what the other head has (P23): "absent at
/// the target head", "exists at the target head, holding 3 of the 5 added lines".
std::string other_head_note(const FileVerdict& row, const NameStyle& name);

/// The notes of a row: its pairing, header_notes() (one when the sides agree,
/// both when they differ) and the other head.
std::string row_notes(const FileVerdict& row, const NameStyle& name);

/// The first differing line of a `different` row on each side (excerpt.h), or ""
/// when the difference is not in the lines (kind, mode, binary).
std::string first_difference(const FileVerdict& row, const ExcerptStyle& excerpt);

/// Remarks of a row beyond its header notes: the first differing line of a
/// `different` row, the region note and the final-file note of an identical one.
/// Words go through `words` (Markdown escapes them), excerpts through `excerpt`.
std::string row_remarks(const FileVerdict& row, const ExcerptStyle& words,
                        const ExcerptStyle& excerpt);

/// The rows of one class in report order: by path, except `different` rows, which
/// are ranked by how many lines only one side has, largest first (P20).
std::vector<const FileVerdict*> rows_of(const Report& report, Verdict verdict);

/// A `different` row's size: "3 common, 1 source-only, 2 target-only" ("" for binary).
std::string size_text(const FileVerdict& row);

/// The commits of a range shown in a report header; JSON lists them all.
constexpr std::size_t header_commits = 20;

/// A side's name for column headings: its label when that is a name (a branch or
/// --label), else `side` ("source", "target").
std::string side_name(const ResolvedRange& range, const char* side);

/// A Markdown list item pinning a range — label, spec, full SHAs — with its
/// commits (abbreviated SHA and subject, oldest first) nested under it (P21).
std::string markdown_range(const ResolvedRange& range, const char* side);

/// The commits of a range for the text view, one per line after `indent`.
std::string text_commits(const ResolvedRange& range, const std::string& indent);

/// The verdict and the totals in one line, without markup:
/// "Verdict: not identical — 7 files: 2 identical (final files equal: 1), 3 different, ...".
std::string verdict_line(const Report& report);

/// For a Markdown report longer than a pull request description may be (65,536
/// characters): the report with a note saying so under its verdict line.
std::string with_size_note(const std::string& markdown, bool brief);

/// `text` without the blanks that column padding leaves before each newline.
std::string trim_line_ends(const std::string& text);

/// The diff configuration in one sentence.
std::string diff_settings_sentence(const Report& report);

}  // namespace portdiff
