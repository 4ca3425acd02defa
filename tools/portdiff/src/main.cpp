// portdiff: compares one change ported to other branches and writes the review report.

#include "audit/audit.h"
#include "cli.h"
#include "error.h"
#include "git_handle.h"
#include "pipeline.h"
#include "render/output.h"
#include "render/render_audit.h"
#include "render/render_find.h"
#include "render/render_reports.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <iostream>
#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace {

/// --color auto: colour only a terminal, and never when NO_COLOR is set to
/// anything but the empty string (no-color.org); always/never are explicit.
portdiff::Color resolve_color(portdiff::Color requested, const std::string& output) {
  if (requested != portdiff::Color::automatic) return requested;
  const char* no_color = std::getenv("NO_COLOR");
  const bool to_stdout = output.empty() || output == "-";
  const bool on =
      to_stdout && portdiff::stdout_is_terminal() && !(no_color != nullptr && no_color[0] != '\0');
  return on ? portdiff::Color::always : portdiff::Color::never;
}

/// The --check condition over every comparison (none for a bare `find`).
bool all_identical(const std::vector<portdiff::Report>& reports) {
  return std::all_of(reports.begin(), reports.end(), [](const portdiff::Report& report) {
    return portdiff::all_identical(report);
  });
}

/// Keeps the promise of one line on stderr even if libgit2's message has several.
std::string one_line(std::string message) {
  for (char& c : message)
    if (c == '\n' || c == '\r') c = ' ';
  return message;
}

}  // namespace

int main(int argc, char** argv) {
  // A closed pipe must be a write error (exit 2 with a message), not a silent death.
  std::signal(SIGPIPE, SIG_IGN);
#ifdef __GLIBC__
  // Blocks of 4 MiB and more (a large file's ends, xdiff's tables) are mapped and
  // unmapped, never kept in the heap for reuse (Note [Large files one at a time]).
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
#endif
  try {
    std::string help;
    std::optional<portdiff::Options> options = portdiff::parse_options(argc, argv, help);
    if (!options) {
      portdiff::write_output(help, "");
      return 0;
    }
    options->color = resolve_color(options->color, options->output);
    portdiff::LibGit2 libgit2;
    if (options->audit) {
      const portdiff::AuditReport report = portdiff::build_audit(*options);
      portdiff::write_output(portdiff::render_audit(report, *options), options->output);
      if (options->check && !portdiff::audit_clean(report)) return 1;
      return report.cut() ? 3 : 0;  // a shallow clone cut a target's history short
    }
    if (options->find) {
      const portdiff::FindReport report = portdiff::build_find_report(*options);
      portdiff::write_output(portdiff::render_find(report, *options), options->output);
      if (options->check && !all_identical(report.reports)) return 1;
      return report.found.cut() ? 3 : 0;  // a shallow clone cut the search short (P26)
    }
    const std::vector<portdiff::Report> reports = portdiff::build_reports(*options);
    portdiff::write_output(portdiff::render_reports(reports, *options), options->output);
    return options->check && !all_identical(reports) ? 1 : 0;
  } catch (const portdiff::Error& e) {
    std::cerr << "portdiff: " << one_line(e.what()) << "\n";
    return 2;
  }
}
