#include "render/render_audit.h"

#include "git_handle.h"
#include "render/markdown_text.h"
#include "render/quote.h"
#include "render/render.h"
#include "render/render_find.h"
#include "render/render_json.h"

#include <algorithm>
#include <sstream>

namespace portdiff {
namespace {

std::string short_hex(const git_oid& id) { return to_hex(id).substr(0, 12); }

const char* status_name(AuditStatus status) {
  switch (status) {
    case AuditStatus::identical:
      return "identical";
    case AuditStatus::different:
      return "different";
    case AuditStatus::not_ported:
      return "not-ported";
    case AuditStatus::hint:
      return "hint";
    case AuditStatus::contained:
      return "contained";
    case AuditStatus::squash:
      return "squash";
  }
  return "";
}

/// A differing file as a cell lists it: `f.py (lines)`, `g.py (only-source)`.
std::string file_words(const AuditFile& file, const NameStyle& name) {
  const std::string why = file.verdict == Verdict::different ? difference_name(file.difference)
                                                             : verdict_name(file.verdict);
  return name(file.path) + " (" + why + ")";
}

/// A squash in words (P38): on its first row every commit it covers and the
/// comparison; on the others, where it is shown.
std::string squash_words(const AuditCell& cell, const git_oid& row, const std::string& port,
                         const std::string& files, const NameStyle& id) {
  if (git_oid_equal(&cell.squash_of.front(), &row) == 0)
    return "in squash " + port + " (shown at " + id(short_hex(cell.squash_of.front())) + ")";
  std::string covered;
  for (const git_oid& commit : cell.squash_of)
    covered += (covered.empty() ? "" : ", ") + id(short_hex(commit));
  const std::string head = "squash " + port + " of " + covered;
  if (!cell.squash_compared) return head + ", not compared (not consecutive commits)";
  return head + (cell.differs.empty() ? ": identical" : ": different: " + files);
}

/// One cell of row `row` in words; `id` and `name` style the port's id and the paths.
std::string cell_words(const AuditCell& cell, const git_oid& row, const NameStyle& id,
                       const NameStyle& name) {
  const std::string port = cell.has_port ? id(short_hex(cell.port.commit)) : "";
  const std::string hint = cell.compared_hint ? " (hint)" : "";
  std::string files;
  for (const AuditFile& file : cell.differs)
    files += (files.empty() ? "" : ", ") + file_words(file, name);
  const std::string unresolved = cell.has_port && !cell.port.unresolved.empty()
                                     ? " (its " + unresolved_words(cell.port.unresolved) + ")"
                                     : "";
  switch (cell.status) {
    case AuditStatus::identical:
      return "identical " + port + hint + unresolved +
             (cell.renames_found ? " (renames found, as its patch-id reads them)" : "");
    case AuditStatus::different:  // equal patch-ids: git calls the two equivalent
      return "different " + port + hint + unresolved +
             (cell.port.by_patch_id ? " (equal patch-id: git's ignores whitespace)" : "") + ": " +
             files;
    case AuditStatus::squash:
      return squash_words(cell, row, port, files, id);
    case AuditStatus::not_ported:
      return "not ported";
    case AuditStatus::hint:
      return "hint " + port + ", not compared (--hints compares it)";
    case AuditStatus::contained:
      return "contained";
  }
  return "";
}

/// The terminal colour of a cell: green when ported as it is, red when not
/// ported or different, yellow for a hint; none for contained.
const char* status_color(const AuditCell& cell) {
  switch (cell.status) {
    case AuditStatus::identical:
      return "\033[32m";
    case AuditStatus::different:
    case AuditStatus::not_ported:
      return "\033[31m";
    case AuditStatus::hint:
      return "\033[33m";
    case AuditStatus::squash:
      return cell.squash_compared && cell.differs.empty() ? "\033[32m" : "\033[33m";
    case AuditStatus::contained:
      return "";
  }
  return "";
}

struct Counts final {
  std::size_t identical = 0, different = 0, not_ported = 0, hint = 0, contained = 0, squash = 0;
};

Counts counts_of(const AuditReport& report, std::size_t target) {
  Counts counts;
  for (const AuditCommit& row : report.commits) switch (row.cells[target].status) {
      case AuditStatus::identical:
        ++counts.identical;
        break;
      case AuditStatus::different:
        ++counts.different;
        break;
      case AuditStatus::not_ported:
        ++counts.not_ported;
        break;
      case AuditStatus::hint:
        ++counts.hint;
        break;
      case AuditStatus::contained:
        ++counts.contained;
        break;
      case AuditStatus::squash:
        ++counts.squash;
        break;
    }
  return counts;
}

std::string counts_words(const Counts& c) {
  return std::to_string(c.identical) + " identical, " + std::to_string(c.different) +
         " different, " + std::to_string(c.not_ported) + " not ported, " + std::to_string(c.hint) +
         " only a hint, " + std::to_string(c.contained) + " contained" +
         (c.squash == 0 ? "" : ", " + std::to_string(c.squash) + " in squashes");
}

std::string verdict_line(const AuditReport& report) {
  std::string line =
      std::string("Audit: ") + (audit_clean(report) ? "all ported" : "not all ported") + " — " +
      plural(report.commits.size(), "commit") + " onto " + plural(report.targets.size(), "target");
  for (std::size_t t = 0; t < report.targets.size(); ++t)
    line += std::string(t == 0 ? ": " : "; ") + report.targets[t].label + " " +
            counts_words(counts_of(report, t)) + ", " +
            std::to_string(report.targets[t].unsourced.size()) + " without source";
  return line;
}

/// Whether --brief keeps the row: some target is neither identical nor contained.
bool shown(const AuditCommit& row, const Options& options) {
  if (!options.brief) return true;
  return std::any_of(row.cells.begin(), row.cells.end(), [](const AuditCell& cell) {
    const bool squash_clean =
        cell.status == AuditStatus::squash && cell.squash_compared && cell.differs.empty();
    return cell.status != AuditStatus::identical && cell.status != AuditStatus::contained &&
           !squash_clean;
  });
}

/// What a shallow clone left unsearched (case P26, as find says it); empty when
/// nothing was cut.
std::string shallow_note(const AuditReport& report) {
  if (!report.cut()) return "";
  std::size_t n = 0;
  for (const AuditTarget& target : report.targets) n += target.history_ends.size();
  return "shallow clone: the search ends at " + plural(n, "boundary commit") +
         "; the target commits before them, and the boundary commits' own patches, were not "
         "searched (deepen with git fetch --deepen=N or --unshallow)";
}

std::string merges_note(const AuditReport& report) {
  if (report.merges == 0) return "";
  return plural(report.merges, "merge") +
         " of the range not audited (a port is of a commit, as git cherry has it)";
}

std::string markdown(const AuditReport& report, const Options& options) {
  std::ostringstream out;
  out << "# Port audit: " << code_text(report.source.label) << " onto ";
  for (std::size_t t = 0; t < report.targets.size(); ++t)
    out << (t == 0 ? "" : ", ") << code_text(report.targets[t].label);
  out << "\n\n**" << md_text(verdict_line(report)) << ".**\n\n";
  out << "Every commit of the source range is looked up on each target by the port matcher "
         "`portdiff find` uses — marks first, read both ways (cherry-pick trailer, `commit X "
         "upstream.`, `[ Upstream commit X ]`, patchback's `[PR #N/X backport]`, Gerrit's "
         "`Change-Id`), then the stable patch-id and the changed lines, then the subject (a "
         "hint, compared only with `--hints`) — among the target's commits since it forked, "
         "and its port compared by the pair report's rules. *contained*: the target holds the "
         "commit itself; *squash*: one target commit ports several commits of the range.\n\n";
  out << "- source " << code_text(report.source.spec) << ": `" << to_hex(report.source.base) << ".."
      << to_hex(report.source.head) << "` — " << plural(report.commits.size(), "commit") << "\n";
  for (const AuditTarget& target : report.targets) {
    out << "- target " << code_text(target.label) << ": `" << to_hex(target.head) << "`, "
        << (target.has_fork ? "forked at `" + to_hex(target.fork) + "`"
                            : std::string("no merge base with the source in this clone"))
        << "\n";
    for (const git_oid& end : target.history_ends)
      out << "  - history ends at `" << to_hex(end)
          << "` (shallow clone): older commits not searched\n";
  }
  if (report.cut()) out << "\n**" << md_text(shallow_note(report)) << ".**\n";
  if (!merges_note(report).empty()) out << "\n" << md_text(merges_note(report)) << ".\n";
  out << "\n| commit | subject |";
  for (const AuditTarget& target : report.targets) out << " " << code(target.label) << " |";
  out << "\n|---|---|";
  for (std::size_t t = 0; t < report.targets.size(); ++t) out << "---|";
  out << "\n";
  const NameStyle id = [](const std::string& hex) { return "`" + hex + "`"; };
  const NameStyle name = [](const std::string& path) { return code(path); };
  for (const AuditCommit& row : report.commits) {
    if (!shown(row, options)) continue;
    out << "| `" << short_hex(row.id) << "` | " << md_text(row.subject) << " |";
    for (const AuditCell& cell : row.cells)
      out << " " << cell_words(cell, row.id, id, name) << " |";
    out << "\n";
  }
  for (const AuditCommit& row : report.commits)
    if (!row.unresolved.empty() && shown(row, options))
      out << "\n`" << short_hex(row.id) << "`: its " << md_text(unresolved_words(row.unresolved))
          << " (that mark fell through to the patch rules).\n";
  for (const AuditTarget& target : report.targets) {
    out << "\n## Commits on " << code_text(target.label) << " with no source in the range ("
        << target.unsourced.size() << ")\n\n";
    if (target.unsourced.empty()) out << "None.\n";
    for (const UnsourcedCommit& commit : target.unsourced)
      out << "- `" << short_hex(commit.id) << "` " << md_text(commit.subject)
          << (commit.has_hint ? " — same subject as `" + short_hex(commit.hint_of) + "` (a hint)"
                              : "")
          << (commit.unresolved.empty() ? ""
                                        : " — its " + md_text(unresolved_words(commit.unresolved)))
          << "\n";
  }
  return out.str();
}

std::string text(const AuditReport& report, const Options& options) {
  std::ostringstream out;
  const bool color = options.color == Color::always;
  const auto paint = [&](const char* code, const std::string& text) {
    return color ? std::string(code) + text + "\033[0m" : text;
  };
  out << paint(audit_clean(report) ? "\033[1;32m" : "\033[1;31m", verdict_line(report)) << "\n";
  out << "source  " << to_hex(report.source.base) << ".." << to_hex(report.source.head) << "  ("
      << quote(report.source.label) << ")\n";
  for (const AuditTarget& target : report.targets) {
    out << "target  " << to_hex(target.head) << "  (" << quote(target.label) << "), "
        << (target.has_fork ? "forked at " + short_hex(target.fork)
                            : std::string("no merge base with the source in this clone"))
        << "\n";
    for (const git_oid& end : target.history_ends)
      out << "        history ends at " << short_hex(end)
          << " (shallow clone)  older commits not searched\n";
  }
  if (report.cut()) out << "        " << shallow_note(report) << "\n";
  if (!merges_note(report).empty()) out << "        " << merges_note(report) << "\n";
  const NameStyle plain = [](const std::string& s) { return s; };
  const NameStyle name = [](const std::string& path) { return quote(path); };
  // Columns as wide as their longest cell; the subject is cut to 40 columns.
  // Widths in terminal columns, a wide character two (case P45).
  std::vector<std::vector<std::string>> rows;
  std::vector<std::vector<const char*>> colors;  // per cell, its status colour
  std::vector<std::string> heading = {"commit", "subject"};
  for (const AuditTarget& target : report.targets) heading.push_back(quote(target.label));
  rows.push_back(heading);
  colors.emplace_back(heading.size(), "");
  for (const AuditCommit& row : report.commits) {
    if (!shown(row, options)) continue;
    std::string subject = quote(row.subject);
    if (display_width(subject) > 40) subject = cut_to_width(subject, 37) + "...";
    std::vector<std::string> line = {short_hex(row.id), subject};
    std::vector<const char*>& painted = colors.emplace_back(2, "");
    for (const AuditCell& cell : row.cells) {
      line.push_back(cell_words(cell, row.id, plain, name));
      painted.push_back(status_color(cell));
    }
    rows.push_back(line);
  }
  std::vector<std::size_t> widths(heading.size(), 0);
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c)
      widths[c] = std::max(widths[c], display_width(row[c]));
  out << "\n";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::vector<std::string>& row = rows[r];
    std::string line = " ";
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += " " + (colors[r][c][0] == '\0' ? row[c] : paint(colors[r][c], row[c]));
      if (c + 1 < row.size()) line += std::string(widths[c] - display_width(row[c]) + 1, ' ');
    }
    out << line << "\n";
  }
  for (const AuditCommit& row : report.commits)
    if (!row.unresolved.empty() && shown(row, options))
      out << "  " << short_hex(row.id) << ": its " << unresolved_words(row.unresolved)
          << " (that mark fell through to the patch rules)\n";
  for (const AuditTarget& target : report.targets) {
    out << "\n"
        << quote(target.label) << ": " << plural(target.unsourced.size(), "commit")
        << " with no source in the range\n";
    for (const UnsourcedCommit& commit : target.unsourced)
      out << "  " << short_hex(commit.id) << "  " << quote(commit.subject)
          << (commit.has_hint ? "  (same subject as " + short_hex(commit.hint_of) + ": a hint)"
                              : "")
          << (commit.unresolved.empty() ? ""
                                        : "  (its " + unresolved_words(commit.unresolved) + ")")
          << "\n";
  }
  return out.str();
}

json marks_json(const std::vector<CommitMark>& marks) {
  json list = json::array();
  for (const auto& [mark, names] : unresolved_pairs(marks))
    list.push_back({{"mark", mark}, {"names", names}});
  return list;
}

std::string json_document(const AuditReport& report, const Options& options) {
  json targets = json::array();
  for (std::size_t t = 0; t < report.targets.size(); ++t) {
    const AuditTarget& target = report.targets[t];
    const Counts c = counts_of(report, t);
    json entry = json::object();
    entry["label"] = target.label;
    entry["head"] = to_hex(target.head);
    entry["fork"] = target.has_fork ? json(to_hex(target.fork)) : json(nullptr);
    entry["counts"] = {{"identical", c.identical},   {"different", c.different},
                       {"not_ported", c.not_ported}, {"hint", c.hint},
                       {"contained", c.contained},   {"squash", c.squash}};
    json unsourced = json::array();
    for (const UnsourcedCommit& commit : target.unsourced) {
      json item = json::object();
      item["commit"] = to_hex(commit.id);
      item["subject"] = commit.subject;
      item["hint_of"] = commit.has_hint ? json(to_hex(commit.hint_of)) : json(nullptr);
      item["unresolved_marks"] = marks_json(commit.unresolved);
      unsourced.push_back(std::move(item));
    }
    entry["no_source"] = std::move(unsourced);
    json ends = json::array();
    for (const git_oid& end : target.history_ends) ends.push_back(to_hex(end));
    entry["history_ends"] = std::move(ends);
    targets.push_back(std::move(entry));
  }
  json commits = json::array();
  for (const AuditCommit& row : report.commits) {
    if (!shown(row, options)) continue;
    json cells = json::array();
    for (const AuditCell& cell : row.cells) {
      json entry = json::object();
      entry["status"] = status_name(cell.status);
      entry["port"] = cell.has_port ? json(to_hex(cell.port.commit)) : json(nullptr);
      entry["found_by"] = cell.has_port ? json(found_by(cell.port, true)) : json::array();
      entry["hint"] = cell.has_port && !cell.port.evidence();
      entry["renames_found"] = cell.renames_found;
      entry["unresolved_marks"] = cell.has_port ? marks_json(cell.port.unresolved) : json::array();
      if (cell.status == AuditStatus::squash) {
        json covered = json::array();
        for (const git_oid& id : cell.squash_of) covered.push_back(to_hex(id));
        entry["squash"] = {{"of", std::move(covered)}, {"compared", cell.squash_compared}};
      } else {
        entry["squash"] = nullptr;
      }
      json files = json::array();
      for (const AuditFile& file : cell.differs) {
        json item = json::object();
        item["path"] = file.path;
        item["path_quoted"] = quote(file.path);  // distinct for distinct names (P42)
        item["class"] = verdict_name(file.verdict);
        item["difference"] = file.verdict == Verdict::different
                                 ? json(difference_name(file.difference))
                                 : json(nullptr);
        files.push_back(std::move(item));
      }
      entry["files"] = std::move(files);
      cells.push_back(std::move(entry));
    }
    json entry = json::object();
    entry["commit"] = to_hex(row.id);
    entry["subject"] = row.subject;
    entry["unresolved_marks"] = marks_json(row.unresolved);
    entry["cells"] = std::move(cells);
    commits.push_back(std::move(entry));
  }
  json document = json::object();
  document["schema"] = "portdiff-audit/1";
  document["verdict"] = verdict_line(report);
  document["source"] = range_json(report.source);
  document["merges_not_audited"] = report.merges;
  document["complete"] = !report.cut();
  document["targets"] = std::move(targets);
  document["commits"] = std::move(commits);
  return dump_json(document);
}

}  // namespace

std::string render_audit(const AuditReport& report, const Options& options) {
  switch (options.format) {
    case Format::json:
      return json_document(report, options);
    case Format::text:
      return text(report, options);
    case Format::markdown:
      break;
  }
  return markdown(report, options);
}

}  // namespace portdiff
