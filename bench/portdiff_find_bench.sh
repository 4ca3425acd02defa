#!/usr/bin/env bash
# portdiff find benchmark (P16): a generated history the size of ansible's — 47
# release branches, 11,905 commits (bench/find_history.py) — searched for the ports
# of one fix, against git's pipeline for the same question:
#   git log -p <branches> --not C | git patch-id --stable
# Each is timed RUNS times (default 5), interleaved, and the medians compared;
# peak memory (max RSS, GNU time) of one run of each. Goal: find within 1.5x.
#
#
# With --audit: a generated release branch (find_history.py --audit: COMMITS
# commits on main, default 300, two in three ported) audited in one run,
#   portdiff audit bench-fork..main --onto release
# against git's nearest pipeline for the same answers: `git cherry -v release main
# bench-fork` plus, for each pair the audit compared, a `git diff -U0` of each of
# its two commits. Medians of RUNS interleaved runs (default 3); peak memory (max
# RSS, GNU time) of one audit.
#
# Usage: bench/portdiff_find_bench.sh [--audit] [PORTDIFF_BINARY]
#   (default build/portdiff/portdiff; build it first, Release)
# Environment: RUNS, KEEP=1 keeps the generated repository; COMMITS (--audit).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
audit_mode=0
if [[ ${1:-} == --audit ]]; then
  audit_mode=1
  shift
fi
portdiff=$(realpath "${1:-$root/build/portdiff/portdiff}")
[[ -x $portdiff ]] || { echo "no portdiff binary at $portdiff (build it first)" >&2; exit 2; }

repo=$(mktemp -d)
[[ ${KEEP:-0} == 1 ]] || trap 'rm -rf "$repo"' EXIT
git -C "$repo" init -q -b main

# seconds, median, audit_beside_git
source "$root/bench/portdiff_timing.sh"

if ((audit_mode)); then
runs=${RUNS:-3}
python3 "$root/bench/find_history.py" --audit ${COMMITS:-} | git -C "$repo" fast-import --quiet
cd "$repo"

audit() { "$portdiff" audit bench-fork..main --onto release --format json; }
# The pairs the audit compared: "<commit> <port>" per line.
pairs=$(mktemp)
audit | python3 -c '
import json, sys
for row in json.load(sys.stdin)["commits"]:
    cell = row["cells"][0]
    if cell["status"] in ("identical", "different"):
        print(row["commit"], cell["port"])' >"$pairs"
git_pipeline() {
  git cherry -v release main bench-fork
  local commit port
  while read -r commit port; do
    git diff -U0 "$commit^" "$commit"
    git diff -U0 "$port^" "$port"
  done <"$pairs"
}

audit_beside_git git_pipeline "$runs"
rss=$(mktemp)
/usr/bin/time -f '%M' -o "$rss" "$portdiff" audit bench-fork..main --onto release --format json >/dev/null
audit_rss=$(awk '{ printf "%.0f", $1 / 1024 }' "$rss")
rm -f "$rss"

echo "commits: main $(git rev-list --count bench-fork..main), release $(git rev-list --count bench-fork..release); pairs compared: $(wc -l <"$pairs")"
echo "git cherry: $(git cherry release main bench-fork | grep -c '^-') equivalent, $(git cherry release main bench-fork | grep -c '^+') not"
echo "portdiff: $("$portdiff" audit bench-fork..main --onto release --format text | sed -n 1p)"
echo "median of $runs runs, wall seconds"
echo "  git cherry -v + 2 git diff -U0 per pair  $git_s"
echo "  portdiff audit                           $audit_s  ($(awk -v a="$audit_s" -v b="$git_s" 'BEGIN { printf "%.2fx", a / b }'))"
echo "peak memory (max RSS): portdiff audit $audit_rss MiB"
echo "git $(git --version | cut -d' ' -f3), $(nproc) cores"
rm -f "$pairs"
exit 0
fi

runs=${RUNS:-5}
python3 "$root/bench/find_history.py" | git -C "$repo" fast-import --quiet
cd "$repo"
mapfile -t branches < <(git for-each-ref --format='%(refname)' 'refs/heads/release-*')

find_cmd() { "$portdiff" find bench-fix --branches 'release-*' --format text; }
git_cmd() { git log -p "${branches[@]}" --not bench-fix | git patch-id --stable; }

echo "commits: $(git rev-list --all | wc -l), branches searched: ${#branches[@]}"
echo "ports found: portdiff $(find_cmd | grep -c 'patch-id,'), git patch-id $(git_cmd | grep -c "^$(find_cmd | sed -n 2p | awk '{print $2}')")"

find_times=() git_times=()
for ((i = 0; i < runs; i++)); do
  find_times+=("$(seconds find_cmd)")
  git_times+=("$(seconds git_cmd)")
done
f=$(printf '%s\n' "${find_times[@]}" | median)
g=$(printf '%s\n' "${git_times[@]}" | median)
printf 'median of %d runs, wall seconds\n' "$runs"
printf '  git log -p | git patch-id --stable  %.3f\n' "$g"
printf '  portdiff find                       %.3f  (%.2fx)\n' "$f" "$(echo "$f / $g" | bc -l)"
if [[ -x /usr/bin/time ]]; then
  fm=$(/usr/bin/time -f %M "$portdiff" find bench-fix --branches 'release-*' --format text 2>&1 >/dev/null | tail -1)
  gm=$( { /usr/bin/time -f %M git log -p "${branches[@]}" --not bench-fix >/dev/null; } 2>&1 | tail -1)
  echo "peak memory (max RSS): portdiff find $((fm / 1024)) MiB; git log -p $((gm / 1024)) MiB"
fi
echo "git $(git --version | awk '{print $3}'), $(nproc) cores"
