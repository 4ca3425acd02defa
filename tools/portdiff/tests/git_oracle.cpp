#include "git_oracle.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <sstream>

namespace portdiff_test {
namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return lines;
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

/// "@@ -a,b +c,d @@": returns b and d (a missing count means 1).
std::pair<long, long> hunk_counts(const std::string& header) {
  const auto count_after = [&](char sign) {
    const std::size_t at = header.find(std::string(" ") + sign);
    const std::size_t comma = header.find(',', at);
    const std::size_t space = header.find(' ', at + 1);
    if (comma == std::string::npos || comma > space) return 1L;
    return std::strtol(header.c_str() + comma + 1, nullptr, 10);
  };
  return {count_after('-'), count_after('+')};
}

/// path -> "mode id" at `commit`.
std::map<std::string, std::string> tree_listing(const TempRepo& repo, const std::string& commit) {
  std::map<std::string, std::string> files;
  for (const std::string& line : split_lines(repo.git("ls-tree -r --full-tree " + commit))) {
    // "<mode> <type> <id>\t<path>"
    const std::size_t tab = line.find('\t');
    const std::size_t first_space = line.find(' ');
    const std::size_t second_space = line.find(' ', first_space + 1);
    files[line.substr(tab + 1)] =
        line.substr(0, first_space) + " " + line.substr(second_space + 1, tab - second_space - 1);
  }
  return files;
}

std::string head_of(const std::string& range) { return range.substr(range.find("..") + 2); }

}  // namespace

std::map<std::string, OraclePatchFile> oracle_patch(const TempRepo& repo, const std::string& range,
                                                    bool find_renames) {
  const std::string diff =
      repo.git(std::string("-c core.quotepath=false -c diff.indentHeuristic=true diff --no-color "
                           "--no-ext-diff --no-textconv --diff-algorithm=myers --full-index -U0 ") +
               (find_renames ? "-M " : "--no-renames ") + range);
  const std::vector<std::string> lines = split_lines(diff);

  std::map<std::string, OraclePatchFile> files;
  std::optional<OraclePatchFile> current;
  std::string current_path;
  // git shows a type change (file <-> symlink <-> submodule) as a deletion and an
  // addition of the same path, in that order: one typechange entry here.
  const auto finish = [&] {
    if (!current) return;
    auto earlier = files.find(current_path);
    if (earlier != files.end() && earlier->second.kind == "deleted" && current->kind == "added") {
      OraclePatchFile& merged = earlier->second;
      merged.kind = "typechange";
      merged.new_mode = current->new_mode;
      merged.new_id = current->new_id;
      merged.added = std::move(current->added);
      merged.binary = merged.binary || current->binary;
    } else {
      files[current_path] = std::move(*current);
    }
    current.reset();
  };

  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (starts_with(line, "diff --git ")) {
      finish();
      current.emplace();
      // "diff --git a/P b/P": the tests use paths without spaces or quoting.
      const std::string names = line.substr(11);
      current_path = names.substr(names.find(" b/") + 3);
      current->old_path = names.substr(2, names.find(" b/") - 2);
    } else if (starts_with(line, "new file mode ")) {
      current->kind = "added";
      current->new_mode = line.substr(14);
    } else if (starts_with(line, "deleted file mode ")) {
      current->kind = "deleted";
      current->old_mode = line.substr(18);
      current_path = current->old_path;
    } else if (starts_with(line, "old mode ")) {
      current->old_mode = line.substr(9);
    } else if (starts_with(line, "new mode ")) {
      current->new_mode = line.substr(9);
    } else if (starts_with(line, "rename from ")) {
      current->kind = "renamed";
    } else if (starts_with(line, "index ")) {
      // "index OLD..NEW[ MODE]"
      const std::string ids = line.substr(6, line.find(' ', 6) - 6);
      current->old_id = ids.substr(0, ids.find(".."));
      current->new_id = ids.substr(ids.find("..") + 2);
      const std::size_t space = line.find(' ', 6);
      if (space != std::string::npos)
        current->old_mode = current->new_mode = line.substr(space + 1);
    } else if (starts_with(line, "Binary files ")) {
      current->binary = true;
    } else if (starts_with(line, "@@ ")) {
      const auto [deleted, added] = hunk_counts(line);
      // With -U0 a hunk is its deleted lines, then its added lines, each possibly
      // followed by the no-newline marker.
      for (long n = 0; n < deleted + added; ++n) {
        const std::string& body = lines[++i];
        std::string content = body.substr(1) + "\n";
        if (i + 1 < lines.size() && starts_with(lines[i + 1], "\\ ")) {
          content.pop_back();
          ++i;
        }
        (body[0] == '-' ? current->deleted : current->added).push_back(content);
      }
    }
  }
  finish();
  return files;
}

std::map<std::string, OracleRow> oracle_classify(const TempRepo& repo, const Ports& ports,
                                                 bool find_renames) {
  const auto source = oracle_patch(repo, ports.source, find_renames);
  const auto target = oracle_patch(repo, ports.target, find_renames);
  const auto source_final = tree_listing(repo, head_of(ports.source));
  const auto target_final = tree_listing(repo, head_of(ports.target));

  std::map<std::string, OracleRow> rows;
  for (const auto& [path, s] : source) {
    OracleRow& row = rows[path];
    row.verdict = "only-source";
    row.source_added = static_cast<long>(s.added.size());
    row.source_deleted = static_cast<long>(s.deleted.size());
  }
  for (const auto& [path, t] : target) {
    OracleRow& row = rows[path];
    row.target_added = static_cast<long>(t.added.size());
    row.target_deleted = static_cast<long>(t.deleted.size());
    auto found = source.find(path);
    if (found == source.end()) {
      row.verdict = "only-target";
      continue;
    }
    const OraclePatchFile& s = found->second;
    // A mode is compared as a change (what the patch did), never as the baseline's.
    const auto mode_change = [](const OraclePatchFile& f) {
      return f.kind == "deleted" || f.old_mode == f.new_mode ? std::string()
                                                             : f.old_mode + ">" + f.new_mode;
    };
    bool same = s.kind == t.kind && mode_change(s) == mode_change(t) && s.binary == t.binary &&
                (s.kind != "renamed" || s.old_path == t.old_path);
    if (same && s.binary) same = s.old_id == t.old_id && s.new_id == t.new_id;
    if (same && !s.binary) same = s.added == t.added && s.deleted == t.deleted;
    row.verdict = same ? "identical" : "different";
    row.both = true;
    const auto s_final = source_final.find(path);
    const auto t_final = target_final.find(path);
    const bool s_exists = s_final != source_final.end();
    const bool t_exists = t_final != target_final.end();
    row.final_equal = s_exists == t_exists && (!s_exists || s_final->second == t_final->second);
  }
  return rows;
}

std::map<std::string, char> git_cherry(const TempRepo& repo, const std::string& upstream,
                                       const std::string& head, const std::string& limit) {
  std::map<std::string, char> signs;
  std::istringstream in(repo.git("cherry -v " + upstream + " " + head + " " + limit));
  for (std::string line; std::getline(in, line);) signs[line.substr(2, 40)] = line[0];
  return signs;
}

}  // namespace portdiff_test
