#include <algorithm>
#include <sstream>

#include "git_handle.h"
#include "render.h"

namespace portdiff {
namespace {

/// `text` made printable and padded to `width` terminal columns.
std::string padded(const std::string& raw, std::size_t width) {
  const std::string text = printable_path(raw);
  const std::size_t used = display_width(text);
  return used >= width ? text + " " : text + std::string(width - used, ' ');
}

std::string short_range(const ResolvedRange& r) {
  return to_hex(r.base).substr(0, 12) + ".." + to_hex(r.head).substr(0, 12);
}

}  // namespace

std::string render_text(const Report& report) {
  const Totals& t = report.totals;
  std::ostringstream out;
  out << "source  " << short_range(report.source) << "  (" << report.source.spec << ")\n";
  out << "target  " << short_range(report.target) << "  (" << report.target.spec << ")\n";
  out << "diff    " << diff_settings_sentence(report) << "\n\n";
  out << t.files << " files (source " << t.source_files << ", target " << t.target_files
      << "): " << t.identical << " identical (" << t.identical_final_equal
      << " with equal final files), " << t.different << " different, " << t.only_source
      << " only-source, " << t.only_target << " only-target\n";

  std::size_t width = 4;
  for (const FileVerdict& row : report.files) width = std::max(width, display_width(printable_path(row.path)));
  width = std::min<std::size_t>(width + 2, 60);

  for (Verdict verdict : {Verdict::identical, Verdict::different, Verdict::only_source,
                          Verdict::only_target}) {
    bool heading = false;
    for (const FileVerdict& row : report.files) {
      if (row.verdict != verdict) continue;
      if (!heading) {
        out << "\n" << verdict_name(verdict) << "\n";
        out << "  " << padded("file", width) << padded("source", 12) << padded("target", 12)
            << "\n";
        heading = true;
      }
      out << "  " << padded(row.path, width)
          << padded(row.source ? counts(*row.source) : "-", 12)
          << padded(row.target ? counts(*row.target) : "-", 12);
      std::string remark;
      if (row.verdict == Verdict::different) remark = difference_description(row.difference);
      if (row.source && row.target)
        remark += std::string(remark.empty() ? "" : "; ") +
                  (row.final_equal ? "final files equal" : "final files differ");
      const std::string note = row_notes(row);
      if (!note.empty()) remark += (remark.empty() ? "" : "; ") + note;
      out << remark << "\n";
    }
  }

  if (!report.tests.empty()) out << "\ntest functions\n";
  for (const TestFileComparison& file : report.tests) {
    out << "  " << printable_path(file.path) << ": source " << file.source_count << ", target "
        << file.target_count << "; same-named " << file.same_named << " (" << file.identical
        << " identical, " << file.differing << " differing); only source " << file.only_source
        << ", only target " << file.only_target << "\n";
    for (const FunctionRow& f : file.functions) {
      const bool both = f.source != PatchEffect::absent && f.target != PatchEffect::absent;
      if (both && f.same_body && f.source == PatchEffect::untouched &&
          f.target == PatchEffect::untouched)
        continue;
      out << "    " << padded(f.name, 40) << padded(effect_name(f.source), 11)
          << padded(effect_name(f.target), 11)
          << (both ? (f.same_body ? "identical" : "differ") : "") << "\n";
    }
  }
  return out.str();
}

}  // namespace portdiff
