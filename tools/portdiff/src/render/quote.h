#pragma once

#include <string>
#include <string_view>

namespace portdiff {

/*
 * Quoting for people, after git's rule for paths (quote_c_style with
 * core.quotePath=false): a name that holds a control byte, '"', '\' or bytes that
 * are not UTF-8 is shown in double quotes with C escapes (\n, \t, \", \\, and
 * \ooo octal for other control bytes and for every byte of an invalid UTF-8
 * sequence); any other name is shown as it is. The quoted form is injective:
 * distinct byte strings never print the same ("x\ny" and x<newline>y differ),
 * and it never contains a newline, so a row stays one row.
 */
std::string quote(std::string_view bytes);

/// quote() that always adds the quotes (for line excerpts, where trailing blanks
/// and a missing final newline must be visible).
std::string quote_always(std::string_view bytes);

/// Whether `bytes` is valid UTF-8.
bool valid_utf8(std::string_view bytes);

}  // namespace portdiff
