#pragma once

#include "options.h"

#include <optional>
#include <string>

namespace portdiff {

/// Parses the command line into Options. For -h/--help (which wins over any other
/// problem on the line) stores the help text in `help` and returns nothing; throws
/// Error (one line, naming the problem) on bad usage.
std::optional<Options> parse_options(int argc, char** argv, std::string& help);

}  // namespace portdiff
