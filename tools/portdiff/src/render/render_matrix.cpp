#include "render/render_matrix.h"

#include "git_handle.h"
#include "render/markdown_text.h"
#include "render/quote.h"
#include "render/render.h"
#include "render/render_json.h"

#include <algorithm>
#include <sstream>

namespace portdiff {
namespace {

const std::vector<Report>& pairs_of(const Matrix& matrix) { return *matrix.pairs; }

/// One cell in words: "identical +1/-0", "different (lines) +2/-1", "only-source",
/// "only-target +1/-0", or "—" when neither side touches the file.
std::string cell_text(const FileVerdict* cell) {
  if (cell == nullptr) return "—";
  switch (cell->verdict) {
    case Verdict::identical:
      return std::string("identical ") + counts(*cell->target);
    case Verdict::different:
      return std::string("different (") + difference_name(cell->difference) + ") " +
             counts(*cell->target);
    case Verdict::only_source:
      return "only-source";
    case Verdict::only_target:
      return std::string("only-target ") + counts(*cell->target);
  }
  return "";
}

bool row_identical(const MatrixRow& row) {
  for (const FileVerdict* cell : row.cells)
    if (cell != nullptr && cell->verdict != Verdict::identical) return false;
  return true;
}

std::string totals_text(const Totals& t) {
  return plural(t.files, "file") + ": " + std::to_string(t.identical) + " identical, " +
         std::to_string(t.different) + " different, " + std::to_string(t.only_source) +
         " only-source, " + std::to_string(t.only_target) + " only-target";
}

std::string pinned(const ResolvedRange& r) { return to_hex(r.base) + ".." + to_hex(r.head); }

}  // namespace

std::string matrix_verdict_line(const Matrix& matrix) {
  std::string line = std::string("Verdict: ") +
                     (all_identical(matrix) ? "identical" : "not identical") + " — " +
                     plural(pairs_of(matrix).size(), "target") + ": ";
  bool first = true;
  for (const Report& pair : pairs_of(matrix)) {
    line += (first ? "" : "; ") + quote(pair.target.label) + " " +
            (all_identical(pair) ? "identical (" + plural(pair.totals.files, "file") + ")"
                                 : "not identical (" + totals_text(pair.totals) + ")");
    first = false;
  }
  return line;
}

std::string render_matrix_markdown(const Matrix& matrix, const Options& options) {
  const std::vector<Report>& pairs = pairs_of(matrix);
  const Report& any = pairs.front();
  std::ostringstream out;
  if (!options.brief)
    out << "# Port matrix: " << code_text(any.source.label) << " against " << pairs.size()
        << " targets\n\n";
  out << "**" << md_text(matrix_verdict_line(matrix)) << ".**\n\n";

  if (!options.brief) {
    out << "## 1. Purpose\n\n"
           "One change and its ports to several branches: each column compares the source "
           "patch with one port, file by file, so a reviewer sees every port at once.\n\n";
    out << "## 2. Rules\n\n"
           "Each cell applies the rules of a pair report (`portdiff SOURCE TARGET`): the added "
           "and the deleted lines of both patches, every byte kept, compared exactly; "
           "**identical**, **different** (with the smallest difference), **only-source**, "
           "**only-target**; — where neither patch touches the file. Counts are the port's, "
           "as `git diff -U0` shows them.\n\n";
    out << "Diff: " << diff_settings_sentence(any) << ".\n\n";
    out << "Pinned ranges and their commits, oldest first (the report does not move when "
           "the branches do):\n\n";
    out << markdown_range(any.source, "source");
    for (const Report& pair : pairs) out << markdown_range(pair.target, "target");
    out << "\n## 3. Totals\n\n| target | files | identical | different | only-source | only-target "
           "|\n"
           "|---|---|---|---|---|---|\n";
    for (const Report& pair : pairs) {
      const Totals& t = pair.totals;
      out << "| " << code(pair.target.label) << " | " << t.files << " | " << t.identical
          << " (final files equal: " << t.identical_final_equal << ") | " << t.different << " | "
          << t.only_source << " | " << t.only_target << " |\n";
    }
    out << "\n### 3.1 Files × targets\n\n";
  }

  std::ostringstream table;
  table << "| file | " << md_text(side_name(any.source, "source")) << " +/- |";
  for (const Report& pair : pairs) table << " " << code(pair.target.label) << " |";
  table << "\n|---|---|" << [&] {
    std::string dashes;
    for (std::size_t i = 0; i < pairs.size(); ++i) dashes += "---|";
    return dashes;
  }() << "\n";
  std::size_t shown = 0;
  for (const MatrixRow& row : matrix.rows) {
    if (options.brief && row_identical(row)) continue;
    ++shown;
    table << "| " << code(row.path) << " | " << (row.source ? counts(*row.source) : "—") << " |";
    for (const FileVerdict* cell : row.cells) table << " " << cell_text(cell) << " |";
    table << "\n";
  }
  if (shown > 0) out << table.str() << "\n";

  // What differs, cell by cell: the excerpt a pair report gives in its notes.
  std::ostringstream notes;
  for (const MatrixRow& row : matrix.rows) {
    for (std::size_t t = 0; t < row.cells.size(); ++t) {
      const FileVerdict* cell = row.cells[t];
      if (cell == nullptr || cell->verdict != Verdict::different) continue;
      std::string remarks = row_remarks(*cell, md_text, code_span);
      const std::string header =
          row_notes(*cell, [](const std::string& name) { return code(name); });
      if (!header.empty()) remarks = header + (remarks.empty() ? "" : "; " + remarks);
      notes << "- " << code_text(row.path) << " × " << code_text(pairs[t].target.label) << ": "
            << md_text(difference_description(cell->difference))
            << (remarks.empty() ? "" : "; " + remarks) << "\n";
    }
  }
  if (!notes.str().empty())
    out << (options.brief ? "" : "### 3.2 Differences\n\n") << notes.str() << "\n";
  if (!options.brief) {
    out << "## 4. Test functions\n\n";
    bool any_tests = false;
    for (const Report& pair : pairs) any_tests = any_tests || !pair.tests.empty();
    if (!any_tests) out << "No Python test file in the union of any pair.\n";
    if (any_tests) out << test_functions_preamble;
    for (const Report& pair : pairs)
      for (const TestFileComparison& file : pair.tests)
        out << markdown_test_file(
            file, "### " + code_text(file.path) + " × " + code_text(pair.target.label));
  }
  std::string text = out.str();
  while (text.size() >= 2 && text[text.size() - 2] == '\n') text.pop_back();
  return with_size_note(text, options.brief);
}

std::string render_matrix_text(const Matrix& matrix, const Options& options) {
  const std::vector<Report>& pairs = pairs_of(matrix);
  const bool color = options.color == Color::always;
  const char* red = color ? "\033[31m" : "";
  const char* green = color ? "\033[32m" : "";
  const char* bold = color ? "\033[1m" : "";
  const char* reset = color ? "\033[0m" : "";
  std::ostringstream out;
  out << bold << (all_identical(matrix) ? green : red) << matrix_verdict_line(matrix) << reset
      << "\n";
  if (!options.brief) {
    const Report& any = pairs.front();
    out << "source  " << pinned(any.source) << "  (" << quote(any.source.label) << ")\n"
        << text_commits(any.source, "        ");
    for (const Report& pair : pairs)
      out << "target  " << pinned(pair.target) << "  (" << quote(pair.target.label) << ")\n"
          << text_commits(pair.target, "        ");
  }
  std::size_t width = 4, cell_width = 8;
  for (const MatrixRow& row : matrix.rows) {
    width = std::max(width, display_width(quote(row.path)));
    for (const FileVerdict* cell : row.cells)
      cell_width = std::max(cell_width, cell_text(cell).size());
  }
  width = std::min<std::size_t>(width + 2, 60);
  for (const Report& pair : pairs)
    cell_width = std::max(cell_width, display_width(quote(pair.target.label)));
  cell_width += 2;
  const auto pad = [](const std::string& text, std::size_t to) {
    const std::size_t used = display_width(text);
    return used >= to ? text + " " : text + std::string(to - used, ' ');
  };
  out << "\n  " << pad("file", width) << pad("source", 10);
  for (const Report& pair : pairs) out << pad(quote(pair.target.label), cell_width);
  out << "\n";
  for (const MatrixRow& row : matrix.rows) {
    if (options.brief && row_identical(row)) continue;
    out << "  " << pad(quote(row.path), width) << pad(row.source ? counts(*row.source) : "-", 10);
    for (const FileVerdict* cell : row.cells) {
      const bool same = cell == nullptr || cell->verdict == Verdict::identical;
      out << (same ? "" : red) << pad(cell_text(cell), cell_width) << (same ? "" : reset);
    }
    out << "\n";
  }
  const auto plain = [](const std::string& text) { return text; };
  for (const MatrixRow& row : matrix.rows)
    for (std::size_t t = 0; t < row.cells.size(); ++t)
      if (row.cells[t] && row.cells[t]->verdict == Verdict::different) {
        const std::string remarks = row_remarks(*row.cells[t], plain, plain);
        out << "  " << quote(row.path) << " x " << quote(pairs[t].target.label) << ": "
            << difference_description(row.cells[t]->difference)
            << (remarks.empty() ? "" : "; " + remarks) << "\n";
      }
  return trim_line_ends(out.str());
}

json matrix_json(const Matrix& matrix, const Options& options) {
  const std::vector<Report>& pairs = pairs_of(matrix);
  json targets = json::array();
  for (const Report& pair : pairs) {
    json target = range_json(pair.target);
    target["identical"] = all_identical(pair);
    targets.push_back(std::move(target));
  }
  json files = json::array();
  for (const MatrixRow& row : matrix.rows) {
    if (options.brief && row_identical(row)) continue;
    json cells = json::array();
    for (const FileVerdict* cell : row.cells) {
      if (cell == nullptr) {
        cells.push_back(nullptr);
        continue;
      }
      json c = json::object();
      c["class"] = verdict_name(cell->verdict);
      c["difference"] = cell->verdict == Verdict::different
                            ? json(difference_name(cell->difference))
                            : json(nullptr);
      c["target"] = side_json(cell->target);
      cells.push_back(std::move(c));
    }
    json file = json::object();
    file["path"] = row.path;
    file["path_quoted"] = quote(row.path);
    file["source"] = side_json(row.source);
    file["cells"] = std::move(cells);
    files.push_back(std::move(file));
  }
  json reports = json::array();
  for (const Report& pair : pairs) reports.push_back(report_json(pair, options));

  json document = json::object();
  document["schema"] = "portdiff-matrix/1";
  document["verdict"] = matrix_verdict_line(matrix);
  document["source"] = range_json(pairs.front().source);
  document["targets"] = std::move(targets);
  document["files"] = std::move(files);
  document["pairs"] = std::move(reports);
  return document;
}

std::string render_matrix_json(const Matrix& matrix, const Options& options) {
  return dump_json(matrix_json(matrix, options));
}

}  // namespace portdiff
