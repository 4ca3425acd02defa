#include <nlohmann/json.hpp>

#include "git_handle.h"
#include "render.h"
#include "side_diff.h"

namespace portdiff {
namespace {

using json = nlohmann::ordered_json;

json mode(std::uint32_t value) { return value == 0 ? json(nullptr) : json(octal_mode(value)); }

json side(const FileChange* change) {
  if (change == nullptr) return nullptr;
  return json{{"status", kind_name(change->kind)},
              {"old_path", change->old_path},
              {"old_mode", mode(change->old_mode)},
              {"new_mode", mode(change->new_mode)},
              {"binary", change->binary},
              {"added", change->added.size()},
              {"deleted", change->deleted.size()}};
}

json range(const ResolvedRange& r) {
  return json{{"spec", r.spec}, {"base", to_hex(r.base)}, {"head", to_hex(r.head)}};
}

}  // namespace

std::string render_json(const Report& report) {
  const Totals& t = report.totals;
  json files = json::array();
  for (const FileVerdict& row : report.files) {
    const bool both = row.source && row.target;
    files.push_back({{"path", row.path},
                     {"class", verdict_name(row.verdict)},
                     {"difference", row.verdict == Verdict::different
                                        ? json(difference_name(row.difference))
                                        : json(nullptr)},
                     {"final_equal", both ? json(row.final_equal) : json(nullptr)},
                     {"source", side(row.source)},
                     {"target", side(row.target)}});
  }

  json tests = json::array();
  for (const TestFileComparison& file : report.tests) {
    json functions = json::array();
    json only_source = json::array(), only_target = json::array();
    for (const FunctionRow& f : file.functions) {
      const bool both = f.source != PatchEffect::absent && f.target != PatchEffect::absent;
      functions.push_back({{"name", f.name},
                           {"source", effect_name(f.source)},
                           {"target", effect_name(f.target)},
                           {"same_body", both ? json(f.same_body) : json(nullptr)}});
      if (f.target == PatchEffect::absent) only_source.push_back(f.name);
      if (f.source == PatchEffect::absent) only_target.push_back(f.name);
    }
    tests.push_back({{"path", file.path},
                     {"source_count", file.source_count},
                     {"target_count", file.target_count},
                     {"same_named", file.same_named},
                     {"identical", file.identical},
                     {"differing", file.differing},
                     {"only_source", only_source},
                     {"only_target", only_target},
                     {"functions", functions}});
  }

  const json document = {
      {"schema", "portdiff/1"},
      {"diff",
       {{"algorithm", DiffSettings::algorithm},
        {"indent_heuristic", DiffSettings::indent_heuristic},
        {"context_lines", DiffSettings::context_lines},
        {"whitespace", "exact"},
        {"find_renames", report.find_renames}}},
      {"source", range(report.source)},
      {"target", range(report.target)},
      {"totals",
       {{"files", t.files},
        {"source_files", t.source_files},
        {"target_files", t.target_files},
        {"identical", t.identical},
        {"identical_final_equal", t.identical_final_equal},
        {"different", t.different},
        {"only_source", t.only_source},
        {"only_target", t.only_target}}},
      {"files", files},
      {"test_files", tests}};
  // Paths are bytes; invalid UTF-8 becomes U+FFFD rather than failing the report.
  return document.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace portdiff
