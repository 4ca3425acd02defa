#include "render/render_find.h"

#include "git_handle.h"
#include "render/markdown_text.h"
#include "render/matrix.h"
#include "render/quote.h"
#include "render/render.h"
#include "render/render_json.h"
#include "render/render_reports.h"

#include <algorithm>
#include <sstream>

namespace portdiff {
namespace {

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& word : words) out += (out.empty() ? "" : ", ") + word;
  return out;
}

/// The branch and the remote-tracking twins folded into it: `main = origin/main`.
std::string branch_title(const BranchPorts& branch) {
  std::string title = branch.branch;
  for (const std::string& twin : branch.twins) title += " = " + twin;
  return title;
}

std::string short_hex(const git_oid& id) { return to_hex(id).substr(0, 12); }

/// One line of the listing: a commit or a phrase, and how it was found.
struct ListingLine final {
  std::string what;
  bool is_commit = false;
  std::string how;
};

/// What --report does with a hint: compared only with --hints, and said either way.
std::string hint_note(const Port& port, const BranchPorts& branch, const Options& options) {
  if (!options.find_report || port.evidence()) return "";
  const Port* compared = compared_port(branch, options.find_hints);
  if (compared == &port) return " — compared as a hint (--hints)";
  if (compared == nullptr && &port == &branch.ports.front() && !branch.contains_commit)
    return " — not compared (--hints compares it)";
  return "";
}

std::vector<ListingLine> branch_lines(const BranchPorts& branch, bool full_ids,
                                      const Options& options) {
  std::vector<ListingLine> lines;
  const auto id = [&](const git_oid& oid) { return full_ids ? to_hex(oid) : short_hex(oid); };
  if (branch.contains_commit) lines.push_back({"contains the commit", false, ""});
  for (const Port& port : branch.ports) {
    const std::string unresolved = unresolved_words(port.unresolved);
    lines.push_back({id(port.commit), true,
                     joined(found_by(port, false)) + hint_note(port, branch, options) +
                         (unresolved.empty() ? "" : "; its " + unresolved)});
  }
  for (const InheritedPort& port : branch.inherited)
    lines.push_back({id(port.commit), true, "inherited (listed on " + port.from + ")"});
  if (lines.empty()) lines.push_back({"no port", false, ""});
  for (const git_oid& end : branch.history_ends)
    lines.push_back(
        {"history ends at " + id(end) + " (shallow clone)", false, "older commits not searched"});
  return lines;
}

/// What a shallow clone left unsearched (case P26); empty when nothing was cut.
std::string shallow_note(const FindResult& found) {
  if (!found.cut()) return "";
  const std::size_t n = found.history_ends.size();
  return "shallow clone: the search ends at " + std::to_string(n) + " boundary commit" +
         (n == 1 ? "" : "s") +
         "; the commits before them, and the boundary commits' own patches, were not "
         "searched (deepen with git fetch --deepen=N or --unshallow)";
}

std::string merge_note(const FindResult& found) {
  if (found.parents < 2) return "";
  return "a merge of " + std::to_string(found.parents) +
         " parents: its patch is against the first parent, as cherry-pick -m1 applies it";
}

std::string markdown_listing(const FindResult& found, const Options& options) {
  std::ostringstream out;
  out << "# Ports of `" << to_hex(found.commit) << "`\n\n";
  out << md_text(found.subject) << " — "
      << (found.has_patch_id ? "patch-id `" + to_hex(found.patch_id) + "`"
                             : "no patch-id (the commit changes nothing)")
      << "\n\n";
  if (!merge_note(found).empty()) out << md_text(merge_note(found)) << ".\n\n";
  if (found.cut()) out << "**" << md_text(shallow_note(found)) << ".**\n\n";
  if (!found.unresolved.empty())
    out << "Its " << md_text(unresolved_words(found.unresolved)) << ": that rule fell through.\n\n";
  out << "| branch | port | found by |\n|---|---|---|\n";
  for (const BranchPorts& branch : found.branches)
    for (const ListingLine& line : branch_lines(branch, true, options))
      out << "| " << code(branch_title(branch)) << " | "
          << (line.is_commit ? "`" + line.what + "`" : line.what) << " | "
          << (line.how.empty() ? "—" : md_text(line.how)) << " |\n";
  return out.str();
}

bool contains_hint(const std::string& how) { return how.find("(hint)") != std::string::npos; }

std::string text_listing(const FindResult& found, const Options& options) {
  std::ostringstream out;
  out << "commit    " << to_hex(found.commit) << "  " << quote(found.subject) << "\n";
  if (!merge_note(found).empty()) out << "          " << merge_note(found) << "\n";
  out << "patch-id  "
      << (found.has_patch_id ? to_hex(found.patch_id) : "none (the commit changes nothing)")
      << "\n";
  if (found.cut()) out << "          " << shallow_note(found) << "\n";
  if (!found.unresolved.empty())
    out << "          its " << unresolved_words(found.unresolved) << ": that rule fell through\n";
  std::size_t width = 6;
  for (const BranchPorts& branch : found.branches)
    width = std::max(width, display_width(quote(branch_title(branch))));
  const bool color = options.color == Color::always;
  for (const BranchPorts& branch : found.branches) {
    const std::string name = quote(branch_title(branch));
    const std::string padded = name + std::string(width + 2 - display_width(name), ' ');
    for (const ListingLine& line : branch_lines(branch, false, options)) {
      // Ports with evidence green, hints yellow, no port red (P46: --color is honoured).
      const char* paint = !color                                      ? ""
                          : line.what == "no port"                    ? "\033[31m"
                          : line.is_commit && contains_hint(line.how) ? "\033[33m"
                          : line.is_commit                            ? "\033[32m"
                                                                      : "";
      out << padded << paint << line.what << (paint[0] == '\0' ? "" : "\033[0m")
          << (line.how.empty() ? "" : "  " + line.how) << "\n";
    }
  }
  return out.str();
}

json unresolved_json(const std::vector<CommitMark>& marks) {
  json list = json::array();
  for (const auto& [mark, names] : unresolved_pairs(marks))
    list.push_back({{"mark", mark}, {"names", names}});
  return list;
}

json hex_list(const std::vector<git_oid>& ids) {
  json list = json::array();
  for (const git_oid& id : ids) list.push_back(to_hex(id));
  return list;
}

std::string json_document(const FindReport& report, const Options& options) {
  const FindResult& found = report.found;
  json branches = json::array();
  for (const BranchPorts& branch : found.branches) {
    json ports = json::array();
    for (const Port& port : branch.ports) {
      json entry = json::object();
      entry["commit"] = to_hex(port.commit);
      entry["found_by"] = found_by(port, true);
      entry["hint"] = !port.evidence();  // only the subject matched
      entry["unresolved_marks"] = unresolved_json(port.unresolved);
      ports.push_back(std::move(entry));
    }
    json inherited = json::array();
    for (const InheritedPort& port : branch.inherited) {
      json entry = json::object();
      entry["commit"] = to_hex(port.commit);
      entry["from"] = port.from;
      inherited.push_back(std::move(entry));
    }
    json entry = json::object();
    entry["branch"] = branch.branch;
    entry["twins"] = branch.twins;
    entry["contains_commit"] = branch.contains_commit;
    entry["ports"] = std::move(ports);
    entry["inherited"] = std::move(inherited);
    entry["history_ends"] = hex_list(branch.history_ends);
    branches.push_back(std::move(entry));
  }
  json document = json::object();
  document["schema"] = "portdiff-find/2";
  document["commit"] = to_hex(found.commit);
  document["subject"] = found.subject;
  document["parents"] = found.parents;
  document["patch_id"] = found.has_patch_id ? json(to_hex(found.patch_id)) : json(nullptr);
  document["unresolved_marks"] = unresolved_json(found.unresolved);
  document["branches"] = std::move(branches);
  document["complete"] = !found.cut();
  document["history_ends"] = hex_list(found.history_ends);
  if (options.find_report) {
    json compared = json::array();  // what --report compared, in branch order
    for (const BranchPorts& branch : found.branches) {
      const Port* port = compared_port(branch, options.find_hints);
      if (port == nullptr) continue;
      json entry = json::object();
      entry["branch"] = branch.branch;
      entry["commit"] = to_hex(port->commit);
      entry["hint"] = !port->evidence();
      compared.push_back(std::move(entry));
    }
    document["compared"] = std::move(compared);
  }
  if (report.reports.size() == 1) {
    document["report"] = report_json(report.reports.front(), options);
  } else if (!report.reports.empty()) {
    const Matrix matrix = build_matrix(report.reports);
    document["report"] = matrix_json(matrix, options);
  }
  return dump_json(document);
}

}  // namespace

/// How a port was found, strongest evidence first; `json` gives the JSON names.
std::vector<std::string> found_by(const Port& port, bool json_names) {
  std::vector<std::string> how;
  for (MarkKind kind : kAllMarks)
    if ((port.marks & static_cast<unsigned>(kind)) != 0) how.push_back(mark_name(kind, json_names));
  if (port.by_patch_id) how.push_back("patch-id");
  if (port.by_changed_lines) how.push_back(json_names ? "changed-lines" : "changed lines");
  if (port.by_subject)
    how.push_back(json_names        ? "same-subject"
                  : port.evidence() ? "same subject"
                                    : "same subject (hint)");
  return how;
}

std::string unresolved_words(const std::vector<CommitMark>& marks) {
  std::string words;
  for (const CommitMark& mark : marks)
    words += (words.empty() ? "" : ", ") + std::string(mark_name(mark.kind, false)) + " names " +
             mark.hex.substr(0, 12);
  return words.empty() ? ""
                       : words + (marks.size() == 1 ? ", not" : ", none") + " in the repository";
}

std::vector<std::pair<std::string, std::string>> unresolved_pairs(
    const std::vector<CommitMark>& marks) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const CommitMark& mark : marks) out.emplace_back(mark_name(mark.kind, true), mark.hex);
  return out;
}

std::string render_find(const FindReport& report, const Options& options) {
  if (options.format == Format::json) return json_document(report, options);
  std::string text = options.format == Format::text ? text_listing(report.found, options)
                                                    : markdown_listing(report.found, options);
  if (!report.reports.empty()) text += "\n" + render_reports(report.reports, options);
  return text;
}

}  // namespace portdiff
