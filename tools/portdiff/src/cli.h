#pragma once

#include <optional>
#include <ostream>

#include "options.h"

namespace portdiff {

/// Parses the command line into Options. Prints the help to `out` and returns
/// nothing for --help; throws Error (one line, naming the problem) on bad usage.
std::optional<Options> parse_options(int argc, char** argv, std::ostream& out);

}  // namespace portdiff
