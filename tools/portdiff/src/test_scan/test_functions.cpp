#include "test_scan/test_functions.h"

#include "test_scan/python_scan.h"

#include <optional>
#include <unordered_map>
#include <fnmatch.h>

namespace portdiff {
namespace {

/// One file's test functions: names in source order, bodies by name.
struct Scanned final {
  std::vector<std::string> order;
  std::unordered_map<std::string, std::string> bodies;
};

/// The blob at `path` in `tree`, or nothing if there is no such file.
std::optional<std::string> read_file(git_repository* repo, git_tree* tree,
                                     const std::string& path) {
  git_tree_entry* entry_raw = nullptr;
  const int found = git_tree_entry_bypath(&entry_raw, tree, path.c_str());
  if (found == GIT_ENOTFOUND) return std::nullopt;
  check(found, "looking up " + path);
  TreeEntryPtr entry(entry_raw);
  if (git_tree_entry_type(entry.get()) != GIT_OBJECT_BLOB) return std::nullopt;
  git_blob* blob_raw = nullptr;
  check(git_blob_lookup(&blob_raw, repo, git_tree_entry_id(entry.get())), "reading " + path);
  BlobPtr blob(blob_raw);
  return std::string(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                     static_cast<std::size_t>(git_blob_rawsize(blob.get())));
}

Scanned scan(const std::optional<std::string>& text) {
  Scanned scanned;
  if (!text) return scanned;
  for (PyTestFunction& f : scan_test_functions(*text)) {
    scanned.order.push_back(f.qualified_name);
    scanned.bodies.emplace(std::move(f.qualified_name), std::move(f.body));
  }
  return scanned;
}

PatchEffect effect(const Scanned& head, const Scanned& base, const std::string& name) {
  auto at_head = head.bodies.find(name);
  if (at_head == head.bodies.end()) return PatchEffect::absent;
  auto at_base = base.bodies.find(name);
  if (at_base == base.bodies.end()) return PatchEffect::added;
  return at_base->second == at_head->second ? PatchEffect::untouched : PatchEffect::changed;
}

/// Trees of one side, looked up once.
struct SideTrees final {
  TreePtr base;
  TreePtr head;
};

}  // namespace

bool is_test_file(const std::string& path, const std::vector<std::string>& globs) {
  const std::size_t slash = path.rfind('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  for (const std::string& glob : globs) {
    const std::string& subject = glob.find('/') == std::string::npos ? name : path;
    if (fnmatch(glob.c_str(), subject.c_str(), 0) == 0) return true;
  }
  return false;
}

std::vector<TestFileComparison> compare_test_functions(git_repository* repo,
                                                       const ResolvedRange& source,
                                                       const ResolvedRange& target,
                                                       const std::vector<FileVerdict>& verdicts,
                                                       const Options& options) {
  std::vector<TestFileComparison> result;
  std::optional<SideTrees> source_trees, target_trees;

  for (const FileVerdict& row : verdicts) {
    if (!is_test_file(row.path, options.test_globs)) continue;
    if (!source_trees) {
      source_trees = SideTrees{commit_tree(repo, source.base), commit_tree(repo, source.head)};
      target_trees = SideTrees{commit_tree(repo, target.base), commit_tree(repo, target.head)};
    }
    // Each side reads the file at its own path: the source's may be mapped or paired.
    const std::string& source_path = row.source ? row.source_path : row.other_path;
    const std::string& target_path = row.target ? row.path : row.other_path;
    const auto source_head = read_file(repo, source_trees->head.get(), source_path);
    const auto target_head = read_file(repo, target_trees->head.get(), target_path);
    if (!source_head && !target_head) continue;  // deleted on both sides: nothing to compare
    // A side that renamed the file had it under its old path at base.
    const std::string& source_old = row.source ? row.source->old_path : source_path;
    const std::string& target_old = row.target ? row.target->old_path : target_path;
    const Scanned s_head = scan(source_head);
    const Scanned s_base = scan(read_file(repo, source_trees->base.get(), source_old));
    const Scanned t_head = scan(target_head);
    const Scanned t_base = scan(read_file(repo, target_trees->base.get(), target_old));

    TestFileComparison file;
    file.path = row.path;
    file.source_present = source_head.has_value();
    file.target_present = target_head.has_value();
    file.source_count = s_head.order.size();
    file.target_count = t_head.order.size();
    const auto add_row = [&](const std::string& name) {
      FunctionRow f{name, effect(s_head, s_base, name), effect(t_head, t_base, name), false};
      if (f.source != PatchEffect::absent && f.target != PatchEffect::absent) {
        f.same_body = s_head.bodies.at(name) == t_head.bodies.at(name);
        ++file.same_named;
        ++(f.same_body ? file.identical : file.differing);
      } else if (f.source != PatchEffect::absent) {
        ++file.only_source;
      } else {
        ++file.only_target;
      }
      file.functions.push_back(std::move(f));
    };
    // Walk names in source order so the report reads like the file.
    for (const std::string& name : s_head.order) add_row(name);
    for (const std::string& name : t_head.order)
      if (s_head.bodies.count(name) == 0) add_row(name);
    result.push_back(std::move(file));
  }
  return result;
}

}  // namespace portdiff
