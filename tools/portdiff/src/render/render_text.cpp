#include "git_handle.h"
#include "render/quote.h"
#include "render/render.h"

#include <algorithm>
#include <sstream>

namespace portdiff {
namespace {

/// ANSI colours for the terminal view; empty strings when colour is off.
struct Palette final {
  explicit Palette(bool on)
      : bold(on ? "\033[1m" : ""),
        green(on ? "\033[32m" : ""),
        red(on ? "\033[31m" : ""),
        yellow(on ? "\033[33m" : ""),
        reset(on ? "\033[0m" : "") {}
  const char* of(Verdict verdict) const {
    switch (verdict) {
      case Verdict::identical:
        return green;
      case Verdict::different:
        return red;
      case Verdict::only_source:
      case Verdict::only_target:
        return yellow;
    }
    return "";
  }
  const char *bold, *green, *red, *yellow, *reset;
};

const NameStyle name_style = [](const std::string& name) { return quote(name); };

/// `raw` quoted (quote.h) and padded to `width` terminal columns.
std::string padded(const std::string& raw, std::size_t width) {
  const std::string text = quote(raw);
  const std::size_t used = display_width(text);
  return used >= width ? text + " " : text + std::string(width - used, ' ');
}

std::string short_range(const ResolvedRange& r) {
  return to_hex(r.base).substr(0, 12) + ".." + to_hex(r.head).substr(0, 12);
}

std::string remarks_of(const FileVerdict& row) {
  std::string remark;
  const auto add = [&](const std::string& text) {
    if (!text.empty()) remark += (remark.empty() ? "" : "; ") + text;
  };
  if (row.verdict == Verdict::different) {
    add(difference_description(row.difference));
    add(size_text(row));
  }
  if (row.source && row.target) add(row.final_equal ? "final files equal" : "final files differ");
  add(row_notes(row, name_style));
  const auto plain = [](const std::string& text) { return text; };
  add(row_remarks(row, plain, plain));
  return remark;
}

}  // namespace

std::string render_text(const Report& report, const Options& options) {
  const Totals& t = report.totals;
  const Palette color(options.color == Color::always);
  const bool identical = t.identical == t.files;
  std::ostringstream out;
  out << color.bold << (identical ? color.green : color.red) << verdict_line(report) << color.reset
      << "\n";
  if (!options.brief) {
    out << "source  " << short_range(report.source) << "  (" << quote(report.source.label) << ")\n"
        << text_commits(report.source, "        ");
    out << "target  " << short_range(report.target) << "  (" << quote(report.target.label) << ")\n"
        << text_commits(report.target, "        ");
    out << "diff    " << diff_settings_sentence(report) << "\n";
    out << plural(t.files, "file") << " (source " << t.source_files << ", target " << t.target_files
        << "): " << t.identical << " identical (" << t.identical_final_equal
        << " with equal final files), " << t.different << " different, " << t.only_source
        << " only-source, " << t.only_target << " only-target\n";
  }

  // Columns fit what they hold (P32): the side columns their heading and every
  // count; the file column its longest path up to 60 columns — a longer path
  // takes a line of its own, the columns following on the next.
  constexpr std::size_t widest_file = 60;
  std::size_t width = 4;
  for (const FileVerdict& row : report.files)
    width = std::max(width, display_width(quote(row.path)));
  width = std::min<std::size_t>(width + 2, widest_file);
  const std::string source_name = side_name(report.source, "source");
  const std::string target_name = side_name(report.target, "target");
  std::size_t source_width = std::max<std::size_t>(12, display_width(quote(source_name)) + 2);
  std::size_t target_width = std::max<std::size_t>(12, display_width(quote(target_name)) + 2);
  for (const FileVerdict& row : report.files) {
    if (row.source) source_width = std::max(source_width, counts(*row.source).size() + 2);
    if (row.target) target_width = std::max(target_width, counts(*row.target).size() + 2);
  }

  for (Verdict verdict :
       {Verdict::identical, Verdict::different, Verdict::only_source, Verdict::only_target}) {
    if (options.brief && verdict == Verdict::identical) continue;
    bool heading = false;
    for (const FileVerdict* ranked : rows_of(report, verdict)) {
      const FileVerdict& row = *ranked;
      if (!heading) {
        out << "\n"
            << color.bold << color.of(verdict) << verdict_name(verdict) << color.reset << "\n";
        out << "  " << padded("file", width) << padded(source_name, source_width)
            << padded(target_name, target_width) << "\n";
        heading = true;
      }
      if (display_width(quote(row.path)) + 1 > width)
        out << "  " << color.of(verdict) << quote(row.path) << color.reset << "\n  "
            << std::string(width, ' ');
      else
        out << "  " << color.of(verdict) << padded(row.path, width) << color.reset;
      out << padded(row.source ? counts(*row.source) : "-", source_width)
          << padded(row.target ? counts(*row.target) : "-", target_width) << remarks_of(row)
          << "\n";
    }
  }
  if (options.brief) return trim_line_ends(out.str());

  if (!report.tests.empty()) out << "\ntest functions\n";
  for (const TestFileComparison& file : report.tests) {
    const auto count = [](bool present, std::size_t n) {
      return present ? std::to_string(n) : std::string("absent");
    };
    out << "  " << quote(file.path) << ": source " << count(file.source_present, file.source_count)
        << ", target " << count(file.target_present, file.target_count) << "; same-named "
        << file.same_named << " (" << file.identical << " identical, " << file.differing
        << " differing); only source " << file.only_source << ", only target " << file.only_target
        << "\n";
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
  return trim_line_ends(out.str());
}

}  // namespace portdiff
