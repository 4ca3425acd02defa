#pragma once

#include <stdexcept>
#include <string>

namespace portdiff {

/*
 * Error: the one exception type portdiff throws for anything that stops a report
 * (bad usage, not a repository, unknown revision, empty range, libgit2 failure,
 * unwritable output). main() catches it once, prints its message as one line on
 * stderr and exits 2. The message names what was wrong; it carries no stack.
 */
class Error final : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace portdiff
