#pragma once

#include <string>

namespace portdiff {

/// Writes `text` to `path`, or to standard output when `path` is empty or "-".
/// Every failure (a full disk, a closed or broken stdout, an unwritable file) is
/// an Error naming the destination and the system's reason, so main exits 2:
/// a report that was not fully written must never look like success.
void write_output(const std::string& text, const std::string& path);

/// Whether standard output is a terminal (for --color auto).
bool stdout_is_terminal();

}  // namespace portdiff
