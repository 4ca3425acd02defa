// portdiff: compares one change ported to other branches and writes the review report.

#include <csignal>
#include <cstdlib>
#include <iostream>

#include "cli.h"
#include "error.h"
#include "find/find.h"
#include "git_handle.h"
#include "render/output.h"
#include "pipeline.h"
#include "render/matrix.h"
#include "render/render.h"
#include "render/render_matrix.h"

namespace {

std::string render_matrix(const portdiff::Matrix& matrix, const portdiff::Options& options) {
  switch (options.format) {
    case portdiff::Format::json: return portdiff::render_matrix_json(matrix, options);
    case portdiff::Format::text: return portdiff::render_matrix_text(matrix, options);
    case portdiff::Format::markdown: break;
  }
  return portdiff::render_matrix_markdown(matrix, options);
}

std::string render(const portdiff::Report& report, const portdiff::Options& options) {
  switch (options.format) {
    case portdiff::Format::json: return portdiff::render_json(report, options);
    case portdiff::Format::text: return portdiff::render_text(report, options);
    case portdiff::Format::markdown: break;
  }
  return portdiff::render_markdown(report, options);
}

/// --color auto: colour only a terminal, and never when NO_COLOR is set to
/// anything but the empty string (no-color.org); always/never are explicit.
portdiff::Color resolve_color(portdiff::Color requested, const std::string& output) {
  if (requested != portdiff::Color::automatic) return requested;
  const char* no_color = std::getenv("NO_COLOR");
  const bool to_stdout = output.empty() || output == "-";
  const bool on = to_stdout && portdiff::stdout_is_terminal() &&
                  !(no_color != nullptr && no_color[0] != '\0');
  return on ? portdiff::Color::always : portdiff::Color::never;
}

/// `portdiff find`: the listing, and with --report the comparison after it.
int run_find(portdiff::Options options) {
  const portdiff::FindResult found = [&] {
    portdiff::RepositoryPtr repo = portdiff::open_repository(options.repo);
    return portdiff::find_ports(repo.get(), options);
  }();
  std::vector<portdiff::Report> reports;
  if (options.find_report) {
    portdiff::add_port_targets(found, options);
    reports = portdiff::build_reports(options);
  }
  std::string text;
  switch (options.format) {
    case portdiff::Format::json:
      text = portdiff::render_find_json(found, options.find_report ? &reports : nullptr, options);
      break;
    case portdiff::Format::text: text = portdiff::render_find_text(found); break;
    case portdiff::Format::markdown: text = portdiff::render_find_markdown(found); break;
  }
  bool identical = true;
  if (options.find_report && options.format != portdiff::Format::json) {
    if (reports.size() == 1) {
      text += "\n" + render(reports.front(), options);
    } else {
      const portdiff::Matrix matrix = portdiff::build_matrix(reports);
      text += "\n" + render_matrix(matrix, options);
    }
  }
  for (const portdiff::Report& report : reports) identical = identical && portdiff::all_identical(report);
  portdiff::write_output(text, options.output);
  return options.check && !identical ? 1 : 0;
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
  try {
    std::string help;
    std::optional<portdiff::Options> options = portdiff::parse_options(argc, argv, help);
    if (!options) {
      portdiff::write_output(help, "");
      return 0;
    }
    options->color = resolve_color(options->color, options->output);
    portdiff::LibGit2 libgit2;
    if (options->find) return run_find(*options);
    const std::vector<portdiff::Report> reports = portdiff::build_reports(*options);
    if (reports.size() == 1) {
      portdiff::write_output(render(reports.front(), *options), options->output);
      return options->check && !portdiff::all_identical(reports.front()) ? 1 : 0;
    }
    const portdiff::Matrix matrix = portdiff::build_matrix(reports);
    portdiff::write_output(render_matrix(matrix, *options), options->output);
    return options->check && !portdiff::all_identical(matrix) ? 1 : 0;
  } catch (const portdiff::Error& e) {
    std::cerr << "portdiff: " << one_line(e.what()) << "\n";
    return 2;
  }
}
