#pragma once

#include <functional>
#include <string>
#include <vector>

#include "file_change.h"

namespace portdiff {

/// One patch line for a report cell: its origin and its bytes quoted (quote.h),
/// newline included, so a trailing blank, a CR or a missing final newline shows;
/// cut after 60 bytes (on a character boundary) with "..." after the quotes.
std::string line_excerpt(char origin, std::string_view line);

/// How a format shows one line excerpt (Markdown: inline code; text: as is).
using ExcerptStyle = std::function<std::string(const std::string&)>;

/// The first line, in patch order, where two patches differ, on each side:
/// `source -"a\n" · target -"b\n"`; "(none)" for a side whose patch ended first.
std::string first_difference_excerpt(const PatchLines& source, const PatchLines& target,
                                     const ExcerptStyle& style);

/// The first deleted and the first added line of one patch: `-"a\n"`, `+"b\n"`.
std::vector<std::string> first_line_excerpts(const PatchLines& lines);

}  // namespace portdiff
