#include <cstdio>

#include "render.h"
#include "side_diff.h"

namespace portdiff {

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::identical: return "identical";
    case Verdict::different: return "different";
    case Verdict::only_source: return "only-source";
    case Verdict::only_target: return "only-target";
  }
  return "";
}

const char* difference_name(Difference difference) {
  switch (difference) {
    case Difference::none: return "";
    case Difference::kind: return "kind";
    case Difference::rename_origin: return "rename-origin";
    case Difference::mode: return "mode";
    case Difference::binary: return "binary";
    case Difference::final_newline: return "final-newline";
    case Difference::line_endings: return "line-endings";
    case Difference::trailing_whitespace: return "trailing-whitespace";
    case Difference::lines: return "lines";
  }
  return "";
}

const char* difference_description(Difference difference) {
  switch (difference) {
    case Difference::none: return "";
    case Difference::kind: return "different kind of change";
    case Difference::rename_origin: return "renamed from different paths";
    case Difference::mode: return "file mode differs";
    case Difference::binary: return "binary content differs";
    case Difference::final_newline: return "only the final newline differs";
    case Difference::line_endings: return "only line endings (CRLF/LF) differ";
    case Difference::trailing_whitespace: return "only trailing whitespace differs";
    case Difference::lines: return "changed lines differ";
  }
  return "";
}

std::string printable_path(const std::string& path) {
  std::string out;
  out.reserve(path.size());
  for (unsigned char c : path) {
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char hex[5];
          std::snprintf(hex, sizeof hex, "\\x%02x", c);
          out += hex;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

std::size_t display_width(const std::string& text) {
  std::size_t width = 0;
  for (unsigned char c : text) width += (c & 0xC0) != 0x80;  // continuation bytes add nothing
  return width;
}

const char* kind_name(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::added: return "added";
    case ChangeKind::deleted: return "deleted";
    case ChangeKind::modified: return "modified";
    case ChangeKind::renamed: return "renamed";
    case ChangeKind::typechange: return "typechange";
  }
  return "";
}

const char* effect_name(PatchEffect effect) {
  switch (effect) {
    case PatchEffect::absent: return "absent";
    case PatchEffect::untouched: return "untouched";
    case PatchEffect::added: return "added";
    case PatchEffect::changed: return "changed";
  }
  return "";
}

std::string counts(const FileChange& change) {
  if (change.binary) return "binary";
  return "+" + std::to_string(change.lines.added.size()) + "/-" +
         std::to_string(change.lines.deleted.size());
}

std::string octal_mode(std::uint32_t mode) {
  char text[16];
  std::snprintf(text, sizeof text, "%06o", static_cast<unsigned>(mode));
  return text;
}

std::string header_notes(const FileChange& change) {
  switch (change.kind) {
    case ChangeKind::added: return "new file " + octal_mode(change.new_mode);
    case ChangeKind::deleted: return "deleted file";
    case ChangeKind::renamed: {
      std::string note = "renamed from " + change.old_path;
      if (change.old_mode != change.new_mode)
        note += ", mode " + octal_mode(change.old_mode) + "→" + octal_mode(change.new_mode);
      return note;
    }
    case ChangeKind::typechange:
    case ChangeKind::modified:
      if (change.old_mode == change.new_mode) return "";
      return std::string(change.kind == ChangeKind::typechange ? "type change " : "mode ") +
             octal_mode(change.old_mode) + "→" + octal_mode(change.new_mode);
  }
  return "";
}

std::string row_notes(const FileVerdict& row) {
  const std::string s = row.source ? header_notes(*row.source) : "";
  const std::string t = row.target ? header_notes(*row.target) : "";
  if (!row.source || !row.target || s == t) return s.empty() ? t : s;
  return "source: " + (s.empty() ? "-" : s) + "; target: " + (t.empty() ? "-" : t);
}

std::string diff_settings_sentence(const Report& report) {
  return std::string("libgit2 diff, algorithm ") + DiffSettings::algorithm +
         (DiffSettings::indent_heuristic ? " with the indent heuristic" : "") + ", " +
         std::to_string(DiffSettings::context_lines) +
         " context lines, no whitespace or end-of-line normalisation, renames " +
         (report.find_renames ? "detected (--find-renames)" : "off (a rename is a delete plus an add)");
}

}  // namespace portdiff
