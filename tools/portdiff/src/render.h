#pragma once

#include <cstddef>
#include <string>

#include "report.h"

namespace portdiff {

/// Stage 6 — render. Each format lives in its own file; all three read the same
/// Report and share the vocabulary below, so the words match across formats.
std::string render_markdown(const Report& report);
std::string render_json(const Report& report);
std::string render_text(const Report& report);

const char* verdict_name(Verdict verdict);        // "identical", "only-source", ...
const char* difference_name(Difference difference);  // "final-newline", ... ("" for none)
const char* difference_description(Difference difference);  // a short phrase for people
const char* kind_name(ChangeKind kind);            // "added", "renamed", ...
const char* effect_name(PatchEffect effect);       // "added", "changed", ...

/// A path for a human view: control bytes C-escaped (`\n`, `\t`, `\x1b`), as git quotes
/// them, so one path stays on one line; every other byte kept.
std::string printable_path(const std::string& path);
/// Columns a UTF-8 string takes in a terminal, counting one per code point.
std::size_t display_width(const std::string& text);

/// A git file mode as git prints it: "100644".
std::string octal_mode(std::uint32_t mode);

/// `+added/-deleted` for one side, or "binary".
std::string counts(const FileChange& change);

/// Header notes a reviewer needs beside the counts: new/deleted file, rename
/// origin, mode change, type change (empty when none).
std::string header_notes(const FileChange& change);

/// header_notes() for a row: one note when the sides agree, both when they differ.
std::string row_notes(const FileVerdict& row);

/// The diff configuration in one sentence.
std::string diff_settings_sentence(const Report& report);

}  // namespace portdiff
