#pragma once

#include "diff/file_change.h"

#include <functional>
#include <string>
#include <vector>

namespace portdiff {

/// One patch line for a report cell: its origin and its bytes quoted (quote.h),
/// newline included, so a trailing blank, a tab, a CR or a missing final newline
/// shows. A line over 60 bytes is cut to a 60-byte window (on character
/// boundaries) that shows byte `focus` with some bytes before it; "..." marks
/// each cut end.
std::string line_excerpt(char origin, std::string_view line, std::size_t focus = 0);

/// How a format shows one line excerpt (Markdown: inline code; text: as is).
using ExcerptStyle = std::function<std::string(const std::string&)>;

/// The first difference between two patches as an interdiff (interdiff.h): on
/// each side the first line, in patch order, that the other side does not have:
/// `source -"a\n" · target -"b\n"`; "(none)" for a side with no such line. Two
/// lines of the same kind are centred on their first differing byte.
std::string first_difference_excerpt(const PatchLines& source, const PatchLines& target,
                                     const ExcerptStyle& style);

/// The first deleted and the first added line of one patch: `-"a\n"`, `+"b\n"`.
std::vector<std::string> first_line_excerpts(const PatchLines& lines);

}  // namespace portdiff
