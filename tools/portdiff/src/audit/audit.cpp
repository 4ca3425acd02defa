#include "audit/audit.h"

#include "error.h"
#include "find/patch_id.h"
#include "find/port_rules.h"
#include "git_handle.h"
#include "pipeline.h"
#include "ranges/ancestry.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <set>

namespace portdiff {
namespace {

/// What the port rules read of one commit, taken once: the source commits and
/// each target's commits are matched all against all.
struct Traits final {
  git_oid id{};
  std::string hex;
  std::string message;
  std::string subject;       // as written
  std::string bare_subject;  // without port markers (port_rules.h)
  std::set<std::string> paths;
  // Read when first needed (read_patch_id): only a commit whose paths equal a
  // commit's of the other side is hashed, as git cherry hashes only commits whose
  // file names collide. Until then `show` keeps its git show diff.
  DiffPtr show;
  bool has_patch_id = false;
  git_oid patch_id{};
  ChangedLineSum line_sum;         // rules out most changed-lines comparisons
  std::optional<SidePatch> lines;  // the report's reading, made when first needed
};

Traits traits_of(git_repository* repo, const git_oid& id) {
  Traits traits;
  traits.id = id;
  traits.hex = to_hex(id);
  CommitPtr commit = lookup_commit(repo, id);
  const char* message = git_commit_message(commit.get());
  traits.message = message == nullptr ? "" : message;
  const char* summary = git_commit_summary(commit.get());
  traits.subject = summary == nullptr ? "" : summary;
  traits.bare_subject = bare_subject(traits.subject);
  traits.show = show_diff(repo, commit.get());
  traits.paths = paths_of(traits.show.get());
  return traits;
}

/// The stable patch-id and changed-line sum of `traits`, read once.
void read_patch_id(git_repository* repo, Traits& traits) {
  if (!traits.show) return;
  traits.has_patch_id = stable_patch_id(repo, traits.show.get(), traits.patch_id, &traits.line_sum);
  traits.show.reset();
}

const SidePatch& lines_of(git_repository* repo, Traits& traits, const Options& options) {
  if (!traits.lines) {
    CommitPtr commit = lookup_commit(repo, traits.id);
    traits.lines = report_patch(repo, commit.get(), options);
  }
  return *traits.lines;
}

/// find's rules for `candidate` as a port of `wanted`.
Port match(git_repository* repo, Traits& wanted, Traits& candidate, const Options& options) {
  Port port;
  port.commit = candidate.id;
  port.by_trailer = names_in_trailer(candidate.message.c_str(), wanted.hex);
  port.by_subject = !wanted.bare_subject.empty() && candidate.bare_subject == wanted.bare_subject;
  if (!wanted.paths.empty() && candidate.paths == wanted.paths) {
    read_patch_id(repo, wanted);
    read_patch_id(repo, candidate);
    port.by_patch_id = wanted.has_patch_id && candidate.has_patch_id &&
                       git_oid_equal(&wanted.patch_id, &candidate.patch_id) != 0;
    // Only where the sums leave it open (Note [Changed-line sum]).
    port.by_changed_lines = wanted.line_sum.may_match(candidate.line_sum) &&
                            same_changed_lines(repo, lines_of(repo, wanted, options),
                                               lines_of(repo, candidate, options));
  }
  return port;
}

/// The commits reachable from `tip` and not from `hidden`, newest first
/// (topological, then by time, as find walks); merges are counted, not listed. In
/// a shallow clone (`boundary` not empty) the walk stops at the boundary, whose
/// commits go to `ends`: their parents are not here, so neither is their patch.
std::vector<git_oid> walk(git_repository* repo, const git_oid& tip, const git_oid& hidden,
                          const std::vector<git_oid>& boundary, std::size_t* merges,
                          std::vector<git_oid>& ends) {
  const std::vector<git_oid> walked = walk_history(repo, {tip}, hidden, boundary);
  std::vector<git_oid> commits;
  for (const git_oid& id : walked) {
    if (at_boundary(boundary, id)) {
      ends.push_back(id);
      continue;
    }
    CommitPtr commit = lookup_commit(repo, id);
    if (git_commit_parentcount(commit.get()) != 1) {
      if (merges != nullptr) ++*merges;
      continue;
    }
    commits.push_back(id);
  }
  return commits;
}

git_oid resolve_target(git_repository* repo, const std::string& spec) {
  git_object* raw = nullptr;
  check(git_revparse_single(&raw, repo, spec.c_str()),
        "unknown revision in --onto '" + spec + "'" + shallow_hint(repo));
  ObjectPtr object(raw);
  git_object* peeled_raw = nullptr;
  check(git_object_peel(&peeled_raw, object.get(), GIT_OBJECT_COMMIT),
        "--onto '" + spec + "' is not a commit");
  ObjectPtr peeled(peeled_raw);
  return *git_object_id(peeled.get());
}

/// The commits of `range` (sorted) that the history of `head` holds: one walk of
/// the target's history back to the range's base, instead of a reachability
/// query per commit (each of which walks that history again); in a shallow clone,
/// back to the boundary.
std::vector<git_oid> held(git_repository* repo, const git_oid& head, const git_oid& base,
                          const std::vector<git_oid>& range, const std::vector<git_oid>& boundary) {
  const std::vector<git_oid> walked = walk_history(repo, {head}, base, boundary);
  std::vector<git_oid> wanted = range, found;
  const auto less = [](const git_oid& a, const git_oid& b) { return git_oid_cmp(&a, &b) < 0; };
  std::sort(wanted.begin(), wanted.end(), less);
  for (const git_oid& id : walked)
    if (std::binary_search(wanted.begin(), wanted.end(), id, less)) found.push_back(id);
  std::sort(found.begin(), found.end(), less);
  return found;
}

}  // namespace

AuditReport build_audit(const Options& options) {
  AuditReport report;
  std::vector<Traits> sources;
  std::vector<std::vector<Traits>> candidates;  // per target, newest first
  std::vector<std::vector<bool>> sourced;       // per candidate: a port of some range commit
  {
    RepositoryPtr repo = open_repository(options.repo);
    report.source = resolve_range(repo.get(), options.source, "source");
    const std::vector<git_oid> boundary = shallow_boundary(repo.get());
    std::vector<git_oid> range_ends;
    std::vector<git_oid> range = walk(repo.get(), report.source.head, report.source.base, boundary,
                                      &report.merges, range_ends);
    if (!range_ends.empty())
      throw Error("source '" + options.source + "' reaches the shallow boundary at " +
                  to_hex(range_ends.front()).substr(0, 12) +
                  ": its parent, which its patch is taken against, is not in this clone" +
                  shallow_hint(repo.get()));
    if (range.empty())  // as an empty range is: "all ported" would say nothing true
      throw Error("no commit to audit in source '" + options.source + "': its " +
                  (report.merges == 1
                       ? std::string("1 commit is a merge")
                       : "commits are all merges (" + std::to_string(report.merges) + ")") +
                  ", and merges are not audited (as git cherry skips them)");
    std::reverse(range.begin(), range.end());  // oldest first
    for (const git_oid& id : range) sources.push_back(traits_of(repo.get(), id));
    std::vector<std::vector<git_oid>> contained;  // per target: the range commits it holds
    for (const std::string& spec : options.onto) {
      AuditTarget& target = report.targets.emplace_back();
      target.label = spec;
      target.head = resolve_target(repo.get(), spec);
      // None: unrelated histories (every commit is the target's own), or the fork
      // lies past a shallow boundary.
      target.has_fork =
          git_merge_base(&target.fork, repo.get(), &target.head, &report.source.head) == 0;
      if (!target.has_fork) target.fork = git_oid{};
      std::vector<Traits>& own = candidates.emplace_back();
      for (const git_oid& id : walk(repo.get(), target.head, report.source.head, boundary, nullptr,
                                    target.history_ends))
        own.push_back(traits_of(repo.get(), id));
      sourced.emplace_back(own.size(), false);
      contained.push_back(held(repo.get(), target.head, report.source.base, range, boundary));
    }

    // Match every source commit with every target commit, as find would.
    for (Traits& source : sources) {
      AuditCommit& row = report.commits.emplace_back();
      row.id = source.id;
      row.subject = source.subject;
      for (std::size_t t = 0; t < report.targets.size(); ++t) {
        AuditCell& cell = row.cells.emplace_back();
        if (std::binary_search(
                contained[t].begin(), contained[t].end(), source.id,
                [](const git_oid& a, const git_oid& b) { return git_oid_cmp(&a, &b) < 0; })) {
          cell.status = AuditStatus::contained;  // no port to look for (case P25)
          continue;
        }
        std::optional<Port> best, hint;
        for (std::size_t c = 0; c < candidates[t].size(); ++c) {
          const Port port = match(repo.get(), source, candidates[t][c], options);
          // A second port of one commit has a source too, though the first is compared.
          if (port.evidence()) sourced[t][c] = true;
          if (port.evidence() && !best) best = port;
          if (!port.evidence() && port.by_subject && !hint) hint = port;
        }
        if (best) {
          cell.has_port = true;
          cell.port = *best;
        } else if (hint) {
          cell.has_port = true;
          cell.port = *hint;
          cell.status = AuditStatus::hint;
          cell.compared_hint = options.find_hints;  // a hint is compared only when asked
        }
      }
    }

    // The target's commits that are no port of any commit of the range.
    for (std::size_t t = 0; t < report.targets.size(); ++t)
      for (std::size_t c = 0; c < candidates[t].size(); ++c) {
        if (sourced[t][c]) continue;
        const Traits& candidate = candidates[t][c];
        UnsourcedCommit& entry = report.targets[t].unsourced.emplace_back();
        entry.id = candidate.id;
        entry.subject = candidate.subject;
        for (const AuditCommit& row : report.commits)
          if (row.cells[t].has_port && git_oid_equal(&row.cells[t].port.commit, &candidate.id)) {
            entry.has_hint = true;  // only a same-subject hint links it to the range
            entry.hint_of = row.id;
            break;
          }
      }
  }

  // Compare each commit with its ports by the pair report's rules, from the
  // patches the matching already read (compare_patches: the pair report's stages
  // after the diff).
  RepositoryPtr repo = open_repository(options.repo);
  const auto patch = [&](Traits& traits) {
    return std::make_shared<const SidePatch>(lines_of(repo.get(), traits, options));
  };
  const auto range_of = [&](const git_oid& id, const std::string& label, bool hint) {
    ResolvedRange range = resolve_range(repo.get(), to_hex(id), "source");
    list_commits(repo.get(), range);
    range.label = hint ? label + " (hint)" : label;
    range.named = !label.empty();
    range.hint = hint;
    return range;
  };
  for (std::size_t s = 0; s < report.commits.size(); ++s) {
    AuditCommit& row = report.commits[s];
    for (std::size_t t = 0; t < row.cells.size(); ++t) {
      AuditCell& cell = row.cells[t];
      if (!cell.has_port || (cell.status == AuditStatus::hint && !cell.compared_hint)) continue;
      Traits& port =
          *std::find_if(candidates[t].begin(), candidates[t].end(),
                        [&](const Traits& c) { return git_oid_equal(&c.id, &cell.port.commit); });
      const Report pair =
          compare_patches(repo.get(), range_of(row.id, report.source.label, false),
                          range_of(port.id, report.targets[t].label, cell.compared_hint),
                          patch(sources[s]), patch(port), options);
      cell.status = all_identical(pair) ? AuditStatus::identical : AuditStatus::different;
      for (const FileVerdict& file : pair.files)
        if (file.verdict != Verdict::identical)
          cell.differs.push_back({file.path, file.verdict, file.difference});
    }
  }
  return report;
}

bool audit_clean(const AuditReport& report) {
  for (const AuditCommit& row : report.commits)
    for (const AuditCell& cell : row.cells)
      if (cell.status != AuditStatus::identical && cell.status != AuditStatus::contained)
        return false;
  return true;
}

}  // namespace portdiff
