#include "audit/audit.h"

#include "classify/classify.h"
#include "classify/realign.h"
#include "diff/collect.h"
#include "diff/side_diff.h"
#include "error.h"
#include "git_handle.h"
#include "ranges/ancestry.h"

#include <algorithm>
#include <optional>

namespace portdiff {
namespace {

bool oid_less(const git_oid& a, const git_oid& b) { return git_oid_cmp(&a, &b) < 0; }

/// One target as the matcher reads it.
struct TargetSide final {
  std::vector<PortCommit> commits;  // since it forked, newest first, merges aside
  std::vector<git_oid> contained;   // the range commits its history holds, sorted
  std::vector<bool> sourced;        // per commit: a port (with evidence) of some range commit
};

/// The commits reachable from `tip` and not from `hidden`, newest first
/// (topological, then by time, as find walks); merges are counted, not listed. In
/// a shallow clone (`boundary` not empty) the walk stops at the boundary, whose
/// commits go to `ends`: their parents are not here, so neither is their patch.
std::vector<git_oid> walk(git_repository* repo, const git_oid& tip, const git_oid& hidden,
                          const std::vector<git_oid>& boundary, std::size_t* merges,
                          std::vector<git_oid>& ends) {
  std::vector<git_oid> commits;
  for (const git_oid& id : walk_history(repo, {tip}, hidden, boundary)) {
    if (at_boundary(boundary, id)) {
      ends.push_back(id);
      continue;
    }
    if (git_commit_parentcount(lookup_commit(repo, id).get()) != 1) {
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
  std::vector<git_oid> wanted = range, found;
  std::sort(wanted.begin(), wanted.end(), oid_less);
  for (const git_oid& id : walk_history(repo, {head}, base, boundary))
    if (std::binary_search(wanted.begin(), wanted.end(), id, oid_less)) found.push_back(id);
  std::sort(found.begin(), found.end(), oid_less);
  return found;
}

/// Step 1: the range's commits, oldest first; errors for a range with nothing to
/// audit or one that reaches a shallow boundary.
std::vector<PortCommit> read_range(git_repository* repo, const Options& options,
                                   const std::vector<git_oid>& boundary, AuditReport& report) {
  report.source = resolve_range(repo, options.source, "source");
  std::vector<git_oid> range_ends;
  std::vector<git_oid> range =
      walk(repo, report.source.head, report.source.base, boundary, &report.merges, range_ends);
  if (!range_ends.empty())
    throw Error("source '" + options.source + "' reaches the shallow boundary at " +
                to_hex(range_ends.front()).substr(0, 12) +
                ": its parent, which its patch is taken against, is not in this clone" +
                shallow_hint(repo));
  if (range.empty())  // as an empty range is: "all ported" would say nothing true
    throw Error("no commit to audit in source '" + options.source + "': its " +
                (report.merges == 1
                     ? std::string("1 commit is a merge")
                     : "commits are all merges (" + std::to_string(report.merges) + ")") +
                ", and merges are not audited (as git cherry skips them)");
  std::reverse(range.begin(), range.end());  // oldest first
  std::vector<PortCommit> sources;
  for (const git_oid& id : range) {
    sources.emplace_back(repo, id);
    AuditCommit& row = report.commits.emplace_back();
    row.id = id;
    row.subject = sources.back().subject();
    row.unresolved = sources.back().unresolved();
  }
  return sources;
}

/// Step 2: one target: its head, its fork, its commits since it forked, and the
/// range commits it already holds.
TargetSide read_target(git_repository* repo, const std::string& spec, const git_oid& head,
                       const std::vector<git_oid>& boundary, AuditReport& report) {
  AuditTarget& target = report.targets.emplace_back();
  target.label = spec;
  target.head = head;
  // None: unrelated histories (every commit is the target's own), or the fork lies
  // past a shallow boundary.
  target.has_fork = git_merge_base(&target.fork, repo, &target.head, &report.source.head) == 0;
  if (!target.has_fork) target.fork = git_oid{};
  TargetSide side;
  for (const git_oid& id :
       walk(repo, target.head, report.source.head, boundary, nullptr, target.history_ends))
    side.commits.emplace_back(repo, id);
  side.sourced.assign(side.commits.size(), false);
  std::vector<git_oid> range;
  for (const AuditCommit& row : report.commits) range.push_back(row.id);
  side.contained = held(repo, target.head, report.source.base, range, boundary);
  return side;
}

/// Step 3: every range commit matched (its cell for this target appended) with the target commits
/// that may be its port (PortIndex); each cell gets its best port with evidence (choose_port), and
/// every target commit with evidence for some range commit is marked sourced.
/// Returns the hints (same subject, no evidence) per row, for step 5.
std::vector<std::vector<Port>> match_target(git_repository* repo, std::vector<PortCommit>& sources,
                                            TargetSide& side, const Options& options,
                                            AuditReport& report) {
  const PortIndex index(repo, side.commits);
  std::vector<std::vector<Port>> hints(sources.size());
  for (std::size_t s = 0; s < sources.size(); ++s) {
    AuditCell& cell = report.commits[s].cells.emplace_back();
    if (std::binary_search(side.contained.begin(), side.contained.end(), sources[s].id(),
                           oid_less)) {
      cell.status = AuditStatus::contained;  // no port to look for (case P25)
      continue;
    }
    std::vector<Port> ports;  // newest first, as the index's order is the walk's
    for (std::size_t c : index.candidates(repo, sources[s])) {
      Port port = match_port(repo, sources[s], side.commits[c], options);
      // A second port of one commit has a source too, though the first is compared.
      if (port.evidence()) side.sourced[c] = true;
      if (port.evidence())
        ports.push_back(std::move(port));
      else if (port.by_subject)
        hints[s].push_back(std::move(port));
    }
    if (const Port* best = choose_port(ports, false)) {
      cell.has_port = true;
      cell.port = *best;
    }
  }
  return hints;
}

/// Step 4: a target commit whose marks name several commits of the range, and
/// that is their chosen port, is one squash (P38): each of their cells says so
/// and lists them all.
void find_squashes(git_repository* repo, std::size_t t, AuditReport& report) {
  std::vector<std::size_t> rows;  // the rows whose port is the same commit, oldest first
  std::vector<bool> done(report.commits.size(), false);
  for (std::size_t s = 0; s < report.commits.size(); ++s) {
    const AuditCell& cell = report.commits[s].cells[t];
    if (done[s] || !cell.has_port || cell.port.marks == 0) continue;
    rows.clear();
    for (std::size_t r = s; r < report.commits.size(); ++r) {
      const AuditCell& other = report.commits[r].cells[t];
      if (other.has_port && other.port.marks != 0 &&
          git_oid_equal(&other.port.commit, &cell.port.commit) != 0)
        rows.push_back(r);
    }
    if (rows.size() < 2) continue;
    // Compared as one range only when each is the first parent of the next.
    bool consecutive = true;
    for (std::size_t i = 1; i < rows.size(); ++i) {
      CommitPtr commit = lookup_commit(repo, report.commits[rows[i]].id);
      consecutive = consecutive && git_oid_equal(git_commit_parent_id(commit.get(), 0),
                                                 &report.commits[rows[i - 1]].id) != 0;
    }
    std::vector<git_oid> covered;
    for (std::size_t r : rows) covered.push_back(report.commits[r].id);
    for (std::size_t r : rows) {
      AuditCell& member = report.commits[r].cells[t];
      member.status = AuditStatus::squash;
      member.squash_of = covered;
      member.squash_compared = consecutive;
      done[r] = true;
    }
  }
}

/// Step 5: a row without a port takes its newest hint that is no other commit's
/// port (P37): a commit proven the port of one commit is never a hint of another.
void choose_hints(const std::vector<std::vector<Port>>& hints, const TargetSide& side,
                  std::size_t t, const Options& options, AuditReport& report) {
  for (std::size_t s = 0; s < report.commits.size(); ++s) {
    AuditCell& cell = report.commits[s].cells[t];
    if (cell.has_port || cell.status == AuditStatus::contained) continue;
    for (const Port& hint : hints[s]) {
      const auto at = std::find_if(
          side.commits.begin(), side.commits.end(),
          [&](const PortCommit& c) { return git_oid_equal(&c.id(), &hint.commit) != 0; });
      if (side.sourced[static_cast<std::size_t>(at - side.commits.begin())]) continue;
      cell.has_port = true;
      cell.port = hint;
      cell.status = AuditStatus::hint;
      cell.compared_hint = options.find_hints;  // a hint is compared only when asked
      break;
    }
  }
}

/// Step 6: the target's commits that are no port of any commit of the range.
void list_unsourced(const TargetSide& side, std::size_t t, AuditReport& report) {
  for (std::size_t c = 0; c < side.commits.size(); ++c) {
    if (side.sourced[c]) continue;
    const PortCommit& commit = side.commits[c];
    UnsourcedCommit& entry = report.targets[t].unsourced.emplace_back();
    entry.id = commit.id();
    entry.subject = commit.subject();
    entry.unresolved = commit.unresolved();
    for (const AuditCommit& row : report.commits)
      if (row.cells[t].has_port && git_oid_equal(&row.cells[t].port.commit, &commit.id())) {
        entry.has_hint = true;  // only a same-subject hint links it to the range
        entry.hint_of = row.id;
        break;
      }
  }
}

/// Step 7: each commit compared with its port by the pair report's rules, from the
/// patches the matching already read: classify and realign, the stages that give
/// each file its verdict — the audit shows no final-file notes, other heads or test
/// functions, so none are computed (P41). A squash is compared once, its covered
/// range against the port. A port of equal patch-id (which reads renames) that
/// differs only because the default reading does not pair renames is compared with
/// renames found, and the cell says so (P39).
void compare_ports(git_repository* repo, std::vector<PortCommit>& sources,
                   std::vector<TargetSide>& sides, const Options& options, AuditReport& report) {
  Options renames = options;
  renames.find_renames = true;
  // The patch of `first`'s parent..`last`, as the pair report reads it.
  const auto read = [&](const git_oid& first, const git_oid& last, const Options& how) {
    ResolvedRange range;
    range.spec = to_hex(first) + "^.." + to_hex(last);
    range.base = *git_commit_parent_id(lookup_commit(repo, first).get(), 0);
    range.head = last;
    return collect_lines(repo, diff_range(repo, range, how).get());
  };
  const auto verdicts = [&](const SidePatch& source, const SidePatch& port) {
    std::vector<FileVerdict> rows = classify(source, port, options.path_maps);
    realign(repo, rows);
    return rows;
  };
  const auto identical = [](const std::vector<FileVerdict>& rows) {
    return std::all_of(rows.begin(), rows.end(),
                       [](const FileVerdict& row) { return row.verdict == Verdict::identical; });
  };
  for (std::size_t s = 0; s < report.commits.size(); ++s) {
    AuditCommit& row = report.commits[s];
    for (std::size_t t = 0; t < row.cells.size(); ++t) {
      AuditCell& cell = row.cells[t];
      if (!cell.has_port || (cell.status == AuditStatus::hint && !cell.compared_hint)) continue;
      const bool squash = cell.status == AuditStatus::squash;
      if (squash && (!cell.squash_compared || !git_oid_equal(&cell.squash_of.front(), &row.id)))
        continue;  // compared on the squash's first row, when its commits are one range
      PortCommit& port = *std::find_if(
          sides[t].commits.begin(), sides[t].commits.end(),
          [&](const PortCommit& c) { return git_oid_equal(&c.id(), &cell.port.commit) != 0; });
      const SidePatch& port_patch = port.lines(repo, options);
      std::optional<SidePatch> squashed;
      if (squash) squashed = read(cell.squash_of.front(), cell.squash_of.back(), options);
      const SidePatch& source_patch = squash ? *squashed : sources[s].lines(repo, options);
      std::vector<FileVerdict> rows = verdicts(source_patch, port_patch);
      std::optional<SidePatch> source_renamed, port_renamed;  // the rows point into them
      if (!squash && !identical(rows) && cell.port.by_patch_id && !options.find_renames) {
        source_renamed = read(row.id, row.id, renames);
        port_renamed = read(port.id(), port.id(), renames);
        std::vector<FileVerdict> renamed = verdicts(*source_renamed, *port_renamed);
        if (identical(renamed)) {
          rows = std::move(renamed);
          cell.renames_found = true;
        }
      }
      if (!squash) cell.status = identical(rows) ? AuditStatus::identical : AuditStatus::different;
      for (const FileVerdict& file : rows)
        if (file.verdict != Verdict::identical)
          cell.differs.push_back({file.path, file.verdict, file.difference});
      if (squash)  // every row of the squash carries its result
        for (AuditCommit& other : report.commits)
          if (std::find_if(cell.squash_of.begin() + 1, cell.squash_of.end(),
                           [&](const git_oid& id) { return git_oid_equal(&id, &other.id) != 0; }) !=
              cell.squash_of.end())
            other.cells[t].differs = cell.differs;
    }
  }
}

}  // namespace

AuditReport build_audit(const Options& options) {
  // The matcher reads each commit's trees and blobs several times (its paths, its
  // patch-id, its lines): keep them in libgit2's cache, which by default keeps no
  // blob and no tree over 4 KiB (a kernel directory's tree is larger).
  git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, GIT_OBJECT_BLOB, std::size_t{256} << 10);
  git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, GIT_OBJECT_TREE, std::size_t{1} << 20);
  git_libgit2_opts(GIT_OPT_SET_CACHE_MAX_SIZE, std::ptrdiff_t{96} << 20);
  AuditReport report;
  RepositoryPtr repo = open_repository(options.repo);
  const std::vector<git_oid> boundary = shallow_boundary(repo.get());
  std::vector<PortCommit> sources = read_range(repo.get(), options, boundary, report);
  std::vector<TargetSide> sides;
  for (const std::string& spec : options.onto) {
    // A target named twice, or two names of one commit, is audited once (P46).
    const git_oid head = resolve_target(repo.get(), spec);
    const auto same =
        std::find_if(report.targets.begin(), report.targets.end(),
                     [&](const AuditTarget& t) { return git_oid_equal(&t.head, &head); });
    if (same != report.targets.end()) {
      if (same->label != spec && same->label.find(" = " + spec) == std::string::npos)
        same->label += " = " + spec;
      continue;
    }
    const std::size_t t = sides.size();
    sides.push_back(read_target(repo.get(), spec, head, boundary, report));
    const auto hints = match_target(repo.get(), sources, sides[t], options, report);
    find_squashes(repo.get(), t, report);
    choose_hints(hints, sides[t], t, options, report);
    list_unsourced(sides[t], t, report);
  }
  compare_ports(repo.get(), sources, sides, options, report);
  return report;
}

bool audit_clean(const AuditReport& report) {
  for (const AuditCommit& row : report.commits)
    for (const AuditCell& cell : row.cells) {
      const bool squash_clean =
          cell.status == AuditStatus::squash && cell.squash_compared && cell.differs.empty();
      if (cell.status != AuditStatus::identical && cell.status != AuditStatus::contained &&
          !squash_clean)
        return false;
    }
  return true;
}

}  // namespace portdiff
