// portdiff: compares one change ported to two branches and writes the review report.

#include <fstream>
#include <iostream>

#include "cli.h"
#include "error.h"
#include "git_handle.h"
#include "pipeline.h"
#include "render.h"

namespace {

std::string render(const portdiff::Report& report, portdiff::Format format) {
  switch (format) {
    case portdiff::Format::json: return portdiff::render_json(report);
    case portdiff::Format::text: return portdiff::render_text(report);
    case portdiff::Format::markdown: break;
  }
  return portdiff::render_markdown(report);
}

void write(const std::string& text, const std::string& path) {
  if (path.empty()) {
    std::cout << text << std::flush;
    return;
  }
  std::ofstream file(path, std::ios::binary);
  file << text;
  file.close();
  if (!file) throw portdiff::Error("cannot write the report to '" + path + "'");
}

/// Keeps the promise of one line on stderr even if libgit2's message has several.
std::string one_line(std::string message) {
  for (char& c : message)
    if (c == '\n' || c == '\r') c = ' ';
  return message;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::optional<portdiff::Options> options = portdiff::parse_options(argc, argv, std::cout);
    if (!options) return 0;
    portdiff::LibGit2 libgit2;
    const portdiff::Report report = portdiff::build_report(*options);
    write(render(report, options->format), options->output);
    return options->check && !portdiff::all_identical(report) ? 1 : 0;
  } catch (const portdiff::Error& e) {
    std::cerr << "portdiff: " << one_line(e.what()) << "\n";
    return 2;
  }
}
