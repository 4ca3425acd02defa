#pragma once

#include <string>

namespace portdiff {

/// Escaping for Markdown tables (GitHub-flavoured), shared by the pair report and
/// the matrix. A table row must stay one row whatever a name or a line holds.

/// Already printable text (no newline) as inline code that survives a table cell:
/// '|' escaped for the table, a backtick fence longer than any run inside.
std::string code_span(const std::string& text);

/// A name as inline code in a table cell, quoted as git quotes paths (quote.h) so
/// it has no newline and distinct names stay distinct.
std::string code(const std::string& raw);

/// The same outside a table (a heading, a list item), where `\|` would show as
/// written: the pipe stays as it is (P32).
std::string code_text(const std::string& raw);

/// Plain text for Markdown: the bytes that can start inline markup or split a
/// table cell are backslash-escaped, so no name or excerpt in a note becomes markup.
std::string md_text(const std::string& text);

}  // namespace portdiff
