#include "find.h"

#include <fnmatch.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "error.h"
#include "markdown_text.h"
#include "quote.h"
#include "render_json.h"

namespace portdiff {
namespace {

CommitPtr lookup_commit(git_repository* repo, const git_oid& id) {
  git_commit* raw = nullptr;
  check(git_commit_lookup(&raw, repo, &id), "looking up commit " + to_hex(id));
  return CommitPtr(raw);
}

/// The diff of a commit against its first parent, as `git show` makes it for
/// `git patch-id` (default context): tree to tree, no attributes from a work tree.
DiffPtr commit_diff(git_repository* repo, git_commit* commit) {
  git_commit* parent_raw = nullptr;
  check(git_commit_parent(&parent_raw, commit, 0),
        "reading the parent of " + to_hex(*git_commit_id(commit)));
  CommitPtr parent(parent_raw);
  git_tree *old_raw = nullptr, *new_raw = nullptr;
  check(git_commit_tree(&old_raw, parent.get()), "reading a tree");
  TreePtr old_tree(old_raw);
  check(git_commit_tree(&new_raw, commit), "reading a tree");
  TreePtr new_tree(new_raw);
  git_diff* diff = nullptr;
  check(git_diff_tree_to_tree(&diff, repo, old_tree.get(), new_tree.get(), nullptr),
        "diffing " + to_hex(*git_commit_id(commit)));
  return DiffPtr(diff);
}

std::set<std::string> paths_of(git_diff* diff) {
  std::set<std::string> paths;
  for (std::size_t i = 0; i < git_diff_num_deltas(diff); ++i) {
    const git_diff_delta* delta = git_diff_get_delta(diff, i);
    paths.insert(delta->old_file.path);
    paths.insert(delta->new_file.path);
  }
  return paths;
}

git_oid patch_id_of(git_diff* diff) {
  git_diff_patchid_options options;
  check(git_diff_patchid_options_init(&options, GIT_DIFF_PATCHID_OPTIONS_VERSION),
        "patch-id options");
  git_oid id;
  check(git_diff_patchid(&id, diff, &options), "computing a patch-id");
  return id;
}

/// Whether `message` says "(cherry picked from commit X)" with X naming `commit`
/// (in full, or abbreviated to 7 or more hex digits).
bool names_in_trailer(const char* message, const std::string& commit_hex) {
  const std::string marker = "(cherry picked from commit ";
  const std::string text = message == nullptr ? "" : message;
  for (std::size_t at = text.find(marker); at != std::string::npos;
       at = text.find(marker, at + 1)) {
    const std::size_t start = at + marker.size();
    const std::size_t end = text.find(')', start);
    if (end == std::string::npos) break;
    const std::string named = text.substr(start, end - start);
    if (named.size() >= 7 && commit_hex.compare(0, named.size(), named) == 0) return true;
  }
  return false;
}

std::vector<std::string> matching_branches(git_repository* repo,
                                           const std::vector<std::string>& globs) {
  git_branch_iterator* raw = nullptr;
  check(git_branch_iterator_new(&raw, repo, GIT_BRANCH_LOCAL), "listing branches");
  BranchIteratorPtr branches(raw);
  std::vector<std::string> names;
  git_reference* ref_raw = nullptr;
  git_branch_t type;
  int status;
  while ((status = git_branch_next(&ref_raw, &type, branches.get())) == 0) {
    ReferencePtr ref(ref_raw);
    const char* name = nullptr;
    check(git_branch_name(&name, ref.get()), "reading a branch name");
    for (const std::string& glob : globs)
      if (fnmatch(glob.c_str(), name, 0) == 0) {
        names.emplace_back(name);
        break;
      }
  }
  if (status != GIT_ITEROVER) check(status, "listing branches");
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

FindResult find_ports(git_repository* repo, const Options& options) {
  FindResult found;
  git_object* object_raw = nullptr;
  check(git_revparse_single(&object_raw, repo, options.find_commit.c_str()),
        "unknown revision in COMMIT '" + options.find_commit + "'");
  ObjectPtr object(object_raw);
  git_object* peeled_raw = nullptr;
  check(git_object_peel(&peeled_raw, object.get(), GIT_OBJECT_COMMIT),
        "COMMIT '" + options.find_commit + "' is not a commit");
  ObjectPtr peeled(peeled_raw);
  found.commit = *git_object_id(peeled.get());
  CommitPtr commit = lookup_commit(repo, found.commit);
  if (git_commit_parentcount(commit.get()) != 1)
    throw Error("COMMIT '" + options.find_commit + "' has " +
                std::to_string(git_commit_parentcount(commit.get())) +
                " parents; find needs a commit with one (its patch is against its parent)");
  const char* summary = git_commit_summary(commit.get());
  found.subject = summary == nullptr ? "" : summary;
  const DiffPtr diff = commit_diff(repo, commit.get());
  const std::set<std::string> paths = paths_of(diff.get());
  found.patch_id = patch_id_of(diff.get());
  const std::string hex = to_hex(found.commit);

  const std::vector<std::string> names = matching_branches(repo, options.branch_globs);
  if (names.empty()) {
    std::string globs;
    for (const std::string& glob : options.branch_globs) globs += (globs.empty() ? "'" : ", '") + glob + "'";
    throw Error("no local branch matches --branches " + globs);
  }
  for (const std::string& name : names) {
    BranchPorts& branch = found.branches.emplace_back();
    branch.branch = name;
    git_revwalk* walk_raw = nullptr;
    check(git_revwalk_new(&walk_raw, repo), "walking " + name);
    RevwalkPtr walk(walk_raw);
    check(git_revwalk_sorting(walk.get(), GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME), "walking " + name);
    check(git_revwalk_push_ref(walk.get(), ("refs/heads/" + name).c_str()), "walking " + name);
    check(git_revwalk_hide(walk.get(), &found.commit), "walking " + name);
    git_oid id;
    int status;
    while ((status = git_revwalk_next(&id, walk.get())) == 0) {
      CommitPtr candidate = lookup_commit(repo, id);
      if (git_commit_parentcount(candidate.get()) != 1) continue;
      Port port;
      port.commit = id;
      port.by_trailer = names_in_trailer(git_commit_message(candidate.get()), hex);
      // A patch-id is a diff's worth of work: only for commits touching the same paths.
      const DiffPtr candidate_diff = commit_diff(repo, candidate.get());
      if (paths_of(candidate_diff.get()) == paths) {
        const git_oid candidate_id = patch_id_of(candidate_diff.get());
        port.by_patch_id = git_oid_equal(&candidate_id, &found.patch_id) != 0;
      }
      if (port.by_trailer || port.by_patch_id) branch.ports.push_back(port);
    }
    if (status != GIT_ITEROVER) check(status, "walking " + name);
  }
  return found;
}

namespace {

std::string found_by(const Port& port) {
  if (port.by_trailer && port.by_patch_id) return "cherry-pick trailer, patch-id";
  return port.by_trailer ? "cherry-pick trailer" : "patch-id";
}

}  // namespace

std::string render_find_markdown(const FindResult& found) {
  std::ostringstream out;
  out << "# Ports of `" << to_hex(found.commit) << "`\n\n";
  out << md_text(found.subject) << " — patch-id `" << to_hex(found.patch_id) << "`\n\n";
  out << "| branch | port | found by |\n|---|---|---|\n";
  for (const BranchPorts& branch : found.branches) {
    if (branch.ports.empty())
      out << "| " << code(branch.branch) << " | no port | — |\n";
    for (const Port& port : branch.ports)
      out << "| " << code(branch.branch) << " | `" << to_hex(port.commit) << "` | "
          << found_by(port) << " |\n";
  }
  return out.str();
}

std::string render_find_text(const FindResult& found) {
  std::ostringstream out;
  out << "commit    " << to_hex(found.commit) << "  " << quote(found.subject) << "\n";
  out << "patch-id  " << to_hex(found.patch_id) << "\n";
  std::size_t width = 6;
  for (const BranchPorts& branch : found.branches)
    width = std::max(width, quote(branch.branch).size());
  for (const BranchPorts& branch : found.branches) {
    const std::string name = quote(branch.branch);
    const std::string padded = name + std::string(width + 2 - name.size(), ' ');
    if (branch.ports.empty()) out << padded << "no port\n";
    for (const Port& port : branch.ports)
      out << padded << to_hex(port.commit).substr(0, 12) << "  " << found_by(port) << "\n";
  }
  return out.str();
}

std::string render_find_json(const FindResult& found, const std::vector<Report>* reports,
                             const Options& options) {
  json branches = json::array();
  for (const BranchPorts& branch : found.branches) {
    json ports = json::array();
    for (const Port& port : branch.ports) {
      json entry = json::object();
      entry["commit"] = to_hex(port.commit);
      json how = json::array();
      if (port.by_trailer) how.push_back("cherry-pick-trailer");
      if (port.by_patch_id) how.push_back("patch-id");
      entry["found_by"] = std::move(how);
      ports.push_back(std::move(entry));
    }
    json entry = json::object();
    entry["branch"] = branch.branch;
    entry["ports"] = std::move(ports);
    branches.push_back(std::move(entry));
  }
  json document = json::object();
  document["schema"] = "portdiff-find/1";
  document["commit"] = to_hex(found.commit);
  document["subject"] = found.subject;
  document["patch_id"] = to_hex(found.patch_id);
  document["branches"] = std::move(branches);
  if (reports != nullptr) {
    if (reports->size() == 1) {
      document["report"] = report_json(reports->front(), options);
    } else {
      const Matrix matrix = build_matrix(*reports);
      document["report"] = matrix_json(matrix, options);
    }
  }
  return dump_json(document);
}

void add_port_targets(const FindResult& found, Options& options) {
  options.source = to_hex(found.commit);
  options.targets.clear();
  options.target_labels.clear();
  for (const BranchPorts& branch : found.branches) {
    if (branch.ports.empty()) continue;
    options.targets.push_back(to_hex(branch.ports.front().commit));
    options.target_labels.push_back(branch.branch);
  }
  if (options.targets.empty())
    throw Error("no port of " + to_hex(found.commit).substr(0, 12) +
                " on the branches --branches matched: nothing to compare");
}

}  // namespace portdiff
