#include "render/render_json.h"

#include "diff/side_diff.h"
#include "git_handle.h"
#include "render/quote.h"
#include "render/render.h"

namespace portdiff {
namespace {

json mode(std::uint32_t value) { return value == 0 ? json(nullptr) : json(octal_mode(value)); }

}  // namespace

// Objects are filled key by key: nlohmann's initializer lists copy every value,
// which dominates rendering on patches of thousands of files.

json side_json(const FileChange* change) {
  if (change == nullptr) return nullptr;
  json out = json::object();
  out["status"] = kind_name(change->kind);
  out["old_path"] = change->old_path;
  out["old_path_quoted"] = quote(change->old_path);
  out["old_mode"] = mode(change->old_mode);
  out["new_mode"] = mode(change->new_mode);
  out["binary"] = change->binary;
  out["added"] = change->lines.added.size();
  out["deleted"] = change->lines.deleted.size();
  return out;
}

json range_json(const ResolvedRange& r) {
  json out = json::object();
  out["spec"] = r.spec;
  out["label"] = r.label;
  out["hint"] = r.hint;
  out["base"] = to_hex(r.base);
  out["head"] = to_hex(r.head);
  json commits = json::array();
  for (const RangeCommit& commit : r.commits) {
    json entry = json::object();
    entry["commit"] = to_hex(commit.id);
    entry["subject"] = commit.subject;
    commits.push_back(std::move(entry));
  }
  out["commits"] = std::move(commits);
  return out;
}

json report_json(const Report& report, const Options& options) {
  const Totals& t = report.totals;
  json files = json::array();
  for (const FileVerdict& row : report.files) {
    if (options.brief && row.verdict == Verdict::identical) continue;
    const bool both = row.source && row.target;
    json file = json::object();
    file["path"] = row.path;
    file["path_quoted"] = quote(row.path);
    file["class"] = verdict_name(row.verdict);
    file["difference"] =
        row.verdict == Verdict::different ? json(difference_name(row.difference)) : json(nullptr);
    file["final_equal"] = both ? json(row.final_equal) : json(nullptr);
    file["identical_by"] = row.verdict != Verdict::identical ? json(nullptr)
                           : row.by_region                   ? json("region")
                                                             : json("git-u0");
    if (row.by_region) {
      json region = json::object();
      region["added"] = row.region_added;
      region["deleted"] = row.region_deleted;
      file["region"] = std::move(region);
    }
    const auto plain = [](const std::string& text) { return text; };
    const std::string first = first_difference(row, plain);
    file["first_difference"] = first.empty() ? json(nullptr) : json(first);
    std::string final_note = row.final_note;
    for (const std::string& line : row.final_excerpts) final_note += " " + line;
    file["final_note"] = final_note.empty() ? json(nullptr) : json(final_note);
    if (row.size.known) {
      json size = json::object();
      size["common"] = row.size.common;
      size["source_only"] = row.size.source_only;
      size["target_only"] = row.size.target_only;
      file["size"] = std::move(size);
    } else {
      file["size"] = nullptr;
    }
    file["pairing"] = row.pairing == Pairing::path     ? "path"
                      : row.pairing == Pairing::mapped ? "mapped"
                                                       : "content";
    file["source_path"] = row.source ? json(row.source_path) : json(nullptr);
    if (row.other_head.checked) {
      json other = json::object();
      other["path"] = row.other_path;
      other["exists"] = row.other_head.exists;
      other["holds_added"] = row.other_head.held;
      other["holds_deleted"] = row.other_head.held_deleted;
      file["other_head"] = std::move(other);
    } else {
      file["other_head"] = nullptr;
    }
    file["source"] = side_json(row.source);
    file["target"] = side_json(row.target);
    files.push_back(std::move(file));
  }

  json tests = json::array();
  for (const TestFileComparison& file : report.tests) {
    json functions = json::array();
    json only_source = json::array(), only_target = json::array();
    for (const FunctionRow& f : file.functions) {
      const bool both = f.source != PatchEffect::absent && f.target != PatchEffect::absent;
      json function = json::object();
      function["name"] = f.name;
      function["source"] = effect_name(f.source);
      function["target"] = effect_name(f.target);
      function["same_body"] = both ? json(f.same_body) : json(nullptr);
      functions.push_back(std::move(function));
      if (f.target == PatchEffect::absent) only_source.push_back(f.name);
      if (f.source == PatchEffect::absent) only_target.push_back(f.name);
    }
    json entry = json::object();
    entry["path"] = file.path;
    entry["source_present"] = file.source_present;
    entry["target_present"] = file.target_present;
    entry["source_count"] = file.source_count;
    entry["target_count"] = file.target_count;
    entry["same_named"] = file.same_named;
    entry["identical"] = file.identical;
    entry["differing"] = file.differing;
    entry["only_source"] = std::move(only_source);
    entry["only_target"] = std::move(only_target);
    entry["functions"] = std::move(functions);
    tests.push_back(std::move(entry));
  }

  json document = json::object();
  document["schema"] = "portdiff/2";
  document["verdict"] = verdict_line(report);
  document["diff"] = {{"algorithm", DiffSettings::algorithm},
                      {"indent_heuristic", DiffSettings::indent_heuristic},
                      {"context_lines", DiffSettings::context_lines},
                      {"whitespace", "exact"},
                      {"find_renames", report.find_renames}};
  document["source"] = range_json(report.source);
  document["target"] = range_json(report.target);
  document["totals"] = {{"files", t.files},
                        {"source_files", t.source_files},
                        {"target_files", t.target_files},
                        {"identical", t.identical},
                        {"identical_final_equal", t.identical_final_equal},
                        {"different", t.different},
                        {"only_source", t.only_source},
                        {"only_target", t.only_target}};
  document["files"] = std::move(files);
  document["test_files"] = options.brief ? json::array() : std::move(tests);
  return document;
}

std::string dump_json(const json& document) {
  // Paths are bytes; invalid UTF-8 becomes U+FFFD in "path" (the display form) while
  // "path_quoted" keeps names distinct.
  return document.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string render_json(const Report& report, const Options& options) {
  return dump_json(report_json(report, options));
}

}  // namespace portdiff
