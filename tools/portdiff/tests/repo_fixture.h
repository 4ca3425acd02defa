#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace portdiff_test {

struct CommandResult final {
  int exit_code = -1;
  std::string out;  // stdout, bytes as written
  std::string err;  // stderr
};

/// Runs `command` under /bin/sh and captures both streams.
CommandResult run_command(const std::string& command);

/// Quotes one argument for /bin/sh.
std::string shell_quote(const std::string& text);

/// Runs the portdiff binary under test with `args`.
CommandResult run_portdiff(const std::vector<std::string>& args);

/// True when `needle` occurs in `text`.
bool contains(const std::string& text, const std::string& needle);

/// Files to write (a value) or remove (nullopt), by path.
using Edit = std::map<std::string, std::optional<std::string>>;

/*
 * TempRepo: a git repository in a fresh temporary directory, driven with the git
 * CLI (the reference implementation the tests compare against), removed on
 * destruction. Identity, dates and core.autocrlf=false are fixed so that content
 * is stored byte for byte.
 */
class TempRepo final {
 public:
  TempRepo();
  ~TempRepo();
  TempRepo(const TempRepo&) = delete;
  TempRepo& operator=(const TempRepo&) = delete;

  const std::string& dir() const { return dir_; }

  /// Runs `git <args>` in the repository; fails the test on a non-zero exit.
  std::string git(const std::string& args) const;

  void apply(const Edit& edit) const;
  void set_executable(const std::string& path, bool executable) const;
  /// Commits everything (an empty commit if nothing changed); returns the full SHA.
  std::string commit(const std::string& message) const;
  /// `git rev-parse <spec>`: the full SHA it names.
  std::string rev(const std::string& spec) const;

 private:
  std::string dir_;
};

/// The two ranges of a port, as portdiff arguments.
struct Ports final {
  std::string source;
  std::string target;
};

/*
 * Builds the usual backport shape: a common base; the source branch applies
 * `source_change` on it; the target branch first moves its baseline with
 * `target_baseline` (its own commit, outside the range), then applies
 * `target_change`.
 */
Ports make_ports(const TempRepo& repo, const Edit& base, const Edit& source_change,
                 const Edit& target_baseline, const Edit& target_change);

}  // namespace portdiff_test
