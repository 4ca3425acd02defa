#include "git_handle.h"
#include "render/markdown_text.h"
#include "render/quote.h"
#include "render/render.h"

#include <sstream>

namespace portdiff {
namespace {

/// Identical rows beyond this many go into a collapsed <details> block.
constexpr std::size_t collapse_identical_above = 10;

const NameStyle name_style = [](const std::string& name) { return code(name); };

const char* final_files(const FileVerdict& row) { return row.final_equal ? "equal" : "differ"; }

/// A row's notes for a Markdown cell: header notes, then the remarks.
std::string notes(const FileVerdict& row) {
  const std::string header = row_notes(row, name_style);
  const std::string remarks = row_remarks(row, md_text, code_span);
  if (header.empty() || remarks.empty()) return header + remarks;
  return header + "; " + remarks;
}

void table_head(std::ostringstream& out, const Report& report, Verdict verdict) {
  const std::string s = md_text(side_name(report.source, "source")) + " +/-";
  const std::string t = md_text(side_name(report.target, "target")) + " +/-";
  switch (verdict) {
    case Verdict::identical:
      out << "| file | " << s << " | " << t << " | final files | notes |\n|---|---|---|---|---|\n";
      break;
    case Verdict::different:
      out << "| file | " << s << " | " << t
          << " | difference | size (lines) | final files | notes |\n"
             "|---|---|---|---|---|---|---|\n";
      break;
    case Verdict::only_source:
      out << "| file | " << s << " | notes |\n|---|---|---|\n";
      break;
    case Verdict::only_target:
      out << "| file | " << t << " | notes |\n|---|---|---|\n";
      break;
  }
}

void table_row(std::ostringstream& out, const FileVerdict& row) {
  out << "| " << code(row.path) << " | ";
  switch (row.verdict) {
    case Verdict::identical:
      out << counts(*row.source) << " | " << counts(*row.target) << " | " << final_files(row);
      break;
    case Verdict::different:
      out << counts(*row.source) << " | " << counts(*row.target) << " | "
          << difference_description(row.difference) << " | " << size_text(row) << " | "
          << final_files(row);
      break;
    case Verdict::only_source:
      out << counts(*row.source);
      break;
    case Verdict::only_target:
      out << counts(*row.target);
      break;
  }
  out << " | " << notes(row) << " |\n";
}

void file_section(std::ostringstream& out, const Report& report, const char* heading,
                  Verdict verdict, std::size_t total) {
  out << "### " << heading << " (" << total << ")\n\n";
  if (total == 0) {
    out << "None.\n\n";
    return;
  }
  const bool collapse = verdict == Verdict::identical && total > collapse_identical_above;
  if (collapse) {
    std::size_t noted = 0;
    for (const FileVerdict& row : report.files)
      if (row.verdict == verdict && (!row.final_note.empty() || row.by_region)) ++noted;
    out << "<details><summary>" << total << " identical files (" << noted
        << " with a note)</summary>\n\n";
  }
  table_head(out, report, verdict);
  for (const FileVerdict* row : rows_of(report, verdict)) table_row(out, *row);
  out << (collapse ? "\n</details>\n\n" : "\n");
}

/// --brief: the rows that are not identical, in one table.
void brief_table(std::ostringstream& out, const Report& report) {
  if (report.totals.identical == report.totals.files) return;
  out << "| file | class | " << md_text(side_name(report.source, "source")) << " +/- | "
      << md_text(side_name(report.target, "target")) << " +/- | notes |\n|---|---|---|---|---|\n";
  for (const FileVerdict& row : report.files) {
    if (row.verdict == Verdict::identical) continue;
    std::string what = row.verdict == Verdict::different
                           ? std::string(difference_description(row.difference))
                           : std::string();
    const std::string n = notes(row);
    if (!n.empty()) what += (what.empty() ? "" : "; ") + n;
    out << "| " << code(row.path) << " | " << verdict_name(row.verdict) << " | "
        << (row.source ? counts(*row.source) : "—") << " | "
        << (row.target ? counts(*row.target) : "—") << " | " << what << " |\n";
  }
}

std::string name_list(const TestFileComparison& file, bool source_side) {
  std::string names;
  for (const FunctionRow& f : file.functions) {
    const bool wanted =
        source_side ? f.target == PatchEffect::absent : f.source == PatchEffect::absent;
    if (!wanted) continue;
    names += names.empty() ? " — " : ", ";
    names += code(f.name);
  }
  return names;
}

void test_section(std::ostringstream& out, const Report& report) {
  out << "## 4. Test functions\n\n";
  if (report.tests.empty()) {
    out << "No Python test file in the union.\n\n";
    return;
  }
  out << test_functions_preamble;
  for (const TestFileComparison& file : report.tests)
    out << markdown_test_file(file, "### " + code_text(file.path));
}

}  // namespace

const char* const test_functions_preamble =
    "Test functions (module level and in classes, `async` and decorated included) at "
    "each head, compared by qualified name; a body runs from its first decorator to "
    "its last line. \"added\"/\"changed\" say what that side's patch did to the "
    "function relative to its base. A file at one head only lists its functions as "
    "unique to that side (source-only or target-only tests).\n\n";

std::string markdown_test_file(const TestFileComparison& file, const std::string& heading) {
  std::ostringstream out;
  out << heading << "\n\n";
  const auto count = [](bool present, std::size_t n, const char* head) {
    return present ? plural(n, "test function")
                   : std::string("file absent at the ") + head + " head";
  };
  out << "- source: " << count(file.source_present, file.source_count, "source")
      << "; target: " << count(file.target_present, file.target_count, "target") << ".\n";
  out << "- same-named: " << file.same_named << " — " << file.identical << " byte-identical, "
      << file.differing << " differing.\n";
  out << "- unique to source: " << file.only_source << name_list(file, true) << ".\n";
  out << "- unique to target: " << file.only_target << name_list(file, false) << ".\n\n";

  std::size_t unlisted = 0;
  std::ostringstream rows;
  for (const FunctionRow& f : file.functions) {
    const bool both = f.source != PatchEffect::absent && f.target != PatchEffect::absent;
    if (both && f.same_body && f.source == PatchEffect::untouched &&
        f.target == PatchEffect::untouched) {
      ++unlisted;
      continue;
    }
    rows << "| " << code(f.name) << " | " << effect_name(f.source) << " | " << effect_name(f.target)
         << " | " << (both ? (f.same_body ? "identical" : "differ") : "—") << " |\n";
  }
  if (!rows.str().empty())
    out << "| function | source | target | bodies |\n|---|---|---|---|\n" << rows.str() << "\n";
  if (unlisted > 0)
    out << plural(unlisted, "identical function") << " that neither patch touched "
        << (unlisted == 1 ? "is" : "are") << " not listed.\n\n";
  return out.str();
}

std::string render_markdown(const Report& report, const Options& options) {
  const Totals& t = report.totals;
  std::ostringstream out;
  if (!options.brief)
    out << "# Backport comparison: " << code_text(report.source.label) << " vs "
        << code_text(report.target.label) << "\n\n";
  out << "**" << md_text(verdict_line(report)) << ".**\n\n";
  if (options.brief) {
    brief_table(out, report);
    std::string text = out.str();
    while (text.size() >= 2 && text[text.size() - 2] == '\n') text.pop_back();
    return with_size_note(text, true);
  }

  out << "## 1. Purpose\n\n"
         "One change, ported to two branches: this report compares the two patches file by "
         "file so a reviewer can see exactly where the ports differ.\n\n";

  out << "## 2. Rules\n\n"
         "For each file in the union of both patches, the added lines and the deleted lines "
         "of each patch are taken in their original order with every byte kept (spaces, "
         "blank lines, CR, and whether the last line ends in a newline) and compared "
         "exactly:\n\n"
         "- **identical**: both sequences are equal, and so are the file headers (kind of "
         "change, modes, rename origin); binary files compare their blob ids. Counts are "
         "`git diff -U0`'s; where git aligns the same edit differently on the two "
         "baselines, the sequences are compared as read between each file's common prefix "
         "and suffix, so the verdict never hinges on how a diff breaks ties.\n"
         "- **different**: one byte or one line count differs; the report names the "
         "smallest difference (final newline, line endings, trailing whitespace, lines, "
         "mode, ...).\n"
         "- **only-source** / **only-target**: only one patch touches the file.\n\n"
         "An identical change is not an identical file: the two baselines may differ, so "
         "the report says separately whether the final files (the blobs at the two heads) "
         "are equal, and when they are not, how they differ (`git diff -U0` of the source "
         "head's file against the target head's).\n\n";
  out << "Diff: " << diff_settings_sentence(report) << ".\n\n";
  out << "Pinned ranges and their commits, oldest first (the report does not move when the "
         "branches do):\n\n";
  out << markdown_range(report.source, "source") << markdown_range(report.target, "target") << "\n";

  out << "## 3. Totals\n\n";
  out << "The union of both patches has " << plural(t.files, "file")
      << "; the source patch touches " << t.source_files << ", the target patch " << t.target_files
      << ".\n\n";
  out << "| class | files |\n|---|---|\n";
  out << "| identical | " << t.identical << " (final files equal: " << t.identical_final_equal
      << ") |\n";
  out << "| different | " << t.different << " |\n";
  out << "| only-source | " << t.only_source << " |\n";
  out << "| only-target | " << t.only_target << " |\n\n";

  file_section(out, report, "3.1 Identical", Verdict::identical, t.identical);
  file_section(out, report, "3.2 Different", Verdict::different, t.different);
  file_section(out, report, "3.3 Only source", Verdict::only_source, t.only_source);
  file_section(out, report, "3.4 Only target", Verdict::only_target, t.only_target);

  test_section(out, report);
  std::string text = out.str();
  while (text.size() >= 2 && text[text.size() - 2] == '\n') text.pop_back();
  return with_size_note(text, options.brief);
}

}  // namespace portdiff
