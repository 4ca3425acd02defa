#!/usr/bin/env bash
# portdiff audit at kernel scale: a generated history of 12,000 commits on
# main and 5 release branches carrying thousands of ports marked every common way
# (bench/kernel_history.py), audited in one run,
#   portdiff audit bench-base..main --onto linux-5.0.y ... --onto linux-5.4.y
# against the summed time of `git cherry -v <target> main bench-base` for the same
# 5 targets. Medians of RUNS interleaved runs (default 3); peak memory (max RSS,
# GNU time) of one run of each; and the audit checked against git cherry: every
# commit git calls equivalent ('-') is identical (or in a squash), and every target
# commit said to have no source is one git marks '+'.
#
# With --repo DIR BASE..HEAD TARGET...: the same on a real history instead (not
# generated; nothing is written to DIR).
#
# Usage: bench/portdiff_kernel_bench.sh [--repo DIR RANGE TARGET...] [PORTDIFF_BINARY]
#   (default build/portdiff/portdiff; build it first, Release)
# Environment: RUNS, COMMITS (generated history, default 12000), KEEP=1 keeps it.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
portdiff=$root/build/portdiff/portdiff
targets=()
if [[ ${1:-} == --repo ]]; then
  repo=$(realpath "$2")
  range=$3
  shift 3
  while (($#)) && ! [[ -f $1 && -x $1 ]]; do  # targets, up to the binary if one is given
    targets+=("$1")
    shift
  done
else
  repo=$(mktemp -d)
  [[ ${KEEP:-0} == 1 ]] || trap 'rm -rf "$repo"' EXIT
  git -C "$repo" init -q -b main
  python3 "$root/bench/kernel_history.py" "$repo" "${COMMITS:-12000}"
  range=bench-base..main
  for r in 0 1 2 3 4; do targets+=("linux-5.$r.y"); done
fi
[[ $# -gt 0 ]] && portdiff=$1
portdiff=$(realpath "$portdiff")
[[ -x $portdiff ]] || { echo "no portdiff binary at $portdiff (build it first)" >&2; exit 2; }
cd "$repo"
runs=${RUNS:-3}
base=${range%%..*}
head=${range##*..}
onto=()
for t in "${targets[@]}"; do onto+=(--onto "$t"); done

# seconds, median, audit_beside_git
source "$root/bench/portdiff_timing.sh"
audit() { "$portdiff" audit "$range" "${onto[@]}" --format json; }
cherry() { for t in "${targets[@]}"; do git cherry -v "$t" "$head" "$base"; done; }

audit_beside_git cherry "$runs"
rss=$(mktemp)
/usr/bin/time -f '%M' -o "$rss" "$portdiff" audit "$range" "${onto[@]}" --format json >/dev/null
audit_rss=$(awk '{ printf "%.0f", $1 / 1024 }' "$rss")
git_rss=0
for t in "${targets[@]}"; do
  /usr/bin/time -f '%M' -o "$rss" git cherry -v "$t" "$head" "$base" >/dev/null
  git_rss=$(awk -v m="$git_rss" '{ v = $1 / 1024; printf "%.0f", (v > m ? v : m) }' "$rss")
done

# The audit against git cherry, per target.
report=$(mktemp)
audit >"$report"
for t in "${targets[@]}"; do
  git cherry "$t" "$head" "$base" | sed "s/^/$t range /"
  git cherry "$head" "$t" "$base" | sed "s/^/$t target /"
done | python3 -c '
import collections, json, sys
audit = json.load(open(sys.argv[1]))
labels = [t["label"] for t in audit["targets"]]
signs = collections.defaultdict(dict)
for line in sys.stdin:
    target, side, sign, sha = line.split()
    signs[(target, side)][sha] = sign
disagree, whitespace, marks = 0, 0, collections.Counter()
for t, label in enumerate(labels):
    for row in audit["commits"]:
        cell = row["cells"][t]
        for how in cell["found_by"]:
            marks[how] += 1
        sign = signs[(label, "range")].get(row["commit"])
        if sign == "-" and cell["status"] == "different" and "patch-id" in cell["found_by"]:
            whitespace += 1  # git patch-id drops whitespace; portdiff compares bytes
        elif sign == "-" and cell["status"] not in ("identical", "squash"):
            disagree += 1
    for commit in audit["targets"][t]["no_source"]:
        if signs[(label, "target")].get(commit["commit"]) != "+":
            disagree += 1
print("cells that disagree with git cherry:", disagree)
print("equivalent for git, different in whitespace (git patch-id drops it):", whitespace)
print("found by:", ", ".join(f"{k} {v}" for k, v in sorted(marks.items())))
unresolved = sum(len(r["unresolved_marks"]) for t in audit["targets"] for r in t["no_source"])
print("unsourced target commits with a mark naming no commit here:", unresolved)
' "$report"
rm -f "$rss" "$report"

echo "range $range: $(git rev-list --count --no-merges "$range") commits; targets: ${targets[*]}"
echo "portdiff: $("$portdiff" audit "$range" "${onto[@]}" --format text | sed -n 1p | cut -c1-400)"
echo "median of $runs runs, wall seconds"
echo "  git cherry -v, summed over the targets  $git_s"
echo "  portdiff audit                          $audit_s  ($(awk -v a="$audit_s" -v b="$git_s" 'BEGIN { printf "%.2fx", a / b }'))"
echo "peak memory (max RSS): portdiff audit $audit_rss MiB; git cherry $git_rss MiB (largest of its runs)"
echo "git $(git --version | cut -d' ' -f3), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
