#include "classify/final_files.h"

#include "diff/content.h"
#include "diff/diff_rule.h"
#include "render/excerpt.h"

namespace portdiff {
namespace {

bool blank(std::string_view line) {
  return line.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

/// The lines of `seq` with every blank byte dropped, and blank lines skipped.
std::vector<std::string> squeezed(const LineSeq& seq) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < seq.size(); ++i) {
    std::string line;
    for (char c : seq.line(i))
      if (c != ' ' && c != '\t' && c != '\r' && c != '\n') line += c;
    if (!line.empty()) out.push_back(std::move(line));
  }
  return out;
}

std::string describe(const PatchLines& lines) {
  bool all_blank = true;
  for (const LineSeq* seq : {&lines.added, &lines.deleted})
    for (std::size_t i = 0; i < seq->size(); ++i) all_blank = all_blank && blank(seq->line(i));
  if (all_blank) return "blank lines only";
  if (squeezed(lines.added) == squeezed(lines.deleted)) return "whitespace only";
  return "";  // no short description: the caller shows the first lines instead
}

}  // namespace

void describe_final_files(git_repository* repo, std::vector<FileVerdict>& rows) {
  for (FileVerdict& row : rows) {
    if (row.verdict != Verdict::identical || row.final_equal) continue;
    const FileChange& s = *row.source;
    const FileChange& t = *row.target;
    if (s.new_mode != t.new_mode) {
      row.final_note = "final modes differ";
      continue;
    }
    if (s.binary || t.binary) {
      row.final_note = "final files differ (binary)";
      continue;
    }
    const PatchLines lines = read_git(read_content(repo, s.new_mode, s.new_id),
                                      read_content(repo, t.new_mode, t.new_id));
    std::string how = describe(lines);
    if (how.empty()) {
      how = "first";
      row.final_excerpts = first_line_excerpts(lines);
    }
    row.final_note = "+" + std::to_string(lines.added.size()) + "/-" +
                     std::to_string(lines.deleted.size()) + " between final files: " + how;
  }
}

}  // namespace portdiff
