#!/usr/bin/env bash
# portdiff benchmark: a generated repository whose patches each touch FILES files
# (default 5,000); portdiff against the floor, two `git diff -U0` runs of the same
# ranges; and the matrix over 3 targets (one run) against the three pairwise runs it
# replaces (goal: <= 1.2x). Each is timed RUNS times (default 7), interleaved so that
# load from other processes hits all alike, and the medians are compared (wall and
# CPU). Peak memory (max RSS, GNU time) of portdiff beside git's.
#
# With --large-file (case P29): a pair report on one generated file of about MB
# megabytes (default 50) against the same floor, the two `git diff -U0` runs of the
# ranges; medians of RUNS interleaved runs (default 5), and GNU time's max RSS of
# one run of each. Goal: within 1.5x of the floor in time and in memory.
#
# Usage: bench/portdiff_bench.sh [--large-file] [PORTDIFF_BINARY]
#   (default build/portdiff/portdiff; build it first, Release)
# Environment: FILES, RUNS, KEEP=1 keeps the generated repository; MB (--large-file).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
large_file=0
if [[ ${1:-} == --large-file ]]; then
  large_file=1
  shift
fi
portdiff=$(realpath "${1:-$root/build/portdiff/portdiff}")
[[ -x $portdiff ]] || { echo "no portdiff binary at $portdiff (build it first)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "needs GNU time at /usr/bin/time (Debian: time)" >&2; exit 2; }

repo=$(mktemp -d)
[[ ${KEEP:-0} == 1 ]] || trap 'rm -rf "$repo"' EXIT
git -C "$repo" init -q -b main
git -C "$repo" config core.autocrlf false
source_range="main..source"
target_range="target~1..target"

source "$root/bench/portdiff_timing.sh"  # median
# Prints "<wall seconds> <CPU seconds (user+sys)>" for one run of "$@".
time_once() {
  local TIMEFORMAT='%R %U %S'
  { time "$@" >/dev/null; } 2>&1 | awk '{ print $1, $2 + $3 }'
}
# Times each function named in "$@" RUNS times, interleaved so that load from other processes
# hits all alike; sets <name>_wall and <name>_cpu to the medians.
measure() {
  local samples name i
  samples=$(mktemp)
  for ((i = 0; i < runs; i++)); do
    for name in "$@"; do echo "$name $(time_once "$name")" >>"$samples"; done
  done
  for name in "$@"; do
    printf -v "${name}_wall" '%s' "$(awk -v k="$name" '$1 == k { print $2 }' "$samples" | median)"
    printf -v "${name}_cpu" '%s' "$(awk -v k="$name" '$1 == k { print $3 }' "$samples" | median)"
  done
  rm -f "$samples"
}
# Peak resident memory in MiB of one run of the program "$@" (GNU time's %M is in KiB).
peak_mib() {
  local rss mib
  rss=$(mktemp)
  /usr/bin/time -f '%M' -o "$rss" "$@" >/dev/null
  mib=$(awk '{ printf "%.0f", $1 / 1024 }' "$rss")
  rm -f "$rss"
  echo "$mib"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
floor() {
  git -C "$repo" diff -U0 "$source_range"
  git -C "$repo" diff -U0 "$target_range"
}
run_portdiff() { "$portdiff" --repo "$repo" "$source_range" "$target_range" "$@"; }
json() { run_portdiff --format json; }
md() { run_portdiff --format md; }

if ((large_file)); then
mb=${MB:-50}
runs=${RUNS:-5}

# One fast-import stream, one file data/big.txt of 69-byte lines (MB MiB):
#   base      the file
#   source    edits every 1000th line and adds a line after every 5000th
#   target    first its own baseline drift (every 3000th line), then the same edit,
#             except every 7th edited line reads differently (a port that differs)
lines=$((mb * 1024 * 1024 / 69))  # 69 bytes a line
awk -v n="$lines" '
# Lines are printed as they are made: fast-import reads the blob up to a delimiter.
function blob(kind,   l, d, e) {
  print "M 100644 inline data/big.txt"
  print "data <<END_OF_BLOB"
  for (l = 1; l <= n; l++) {
    d = (kind == 1 || kind == 3) && l % 3000 == 0 ? "D" : "-"
    e = kind >= 2 && l % 1000 == 0 ? ((kind == 3 && l % 7000 == 0) ? "P" : "E") : "-"
    printf "%08d %s%s ordinary generated text of the large file benchmark ....\n", l, d, e
    if (kind >= 2 && l % 5000 == 0) print "added line"
  }
  print "END_OF_BLOB"
}
function commit(ref, mark, msg, kind, parent) {
  printf "commit %s\nmark :%d\ncommitter bench <bench@example.com> 1700000000 +0000\n", ref, mark
  printf "data %d\n%s\n", length(msg), msg
  if (parent != "") printf "from %s\n", parent
  blob(kind)
}
BEGIN {
  commit("refs/heads/main", 1, "base", 0, "")
  commit("refs/heads/source", 2, "change", 2, ":1")
  commit("refs/heads/target", 3, "target baseline", 1, ":1")
  commit("refs/heads/target", 4, "change (port)", 3, "")
}' | git -C "$repo" fast-import --quiet

floor >/dev/null  # warm the page cache once, then measure
json >/dev/null
measure floor json md
git_source_rss=$(peak_mib git -C "$repo" diff -U0 "$source_range")
git_target_rss=$(peak_mib git -C "$repo" diff -U0 "$target_range")
git_rss=$((git_source_rss > git_target_rss ? git_source_rss : git_target_rss))
json_rss=$(peak_mib "$portdiff" --repo "$repo" "$source_range" "$target_range" --format json)
md_rss=$(peak_mib "$portdiff" --repo "$repo" "$source_range" "$target_range" --format md)
totals=$(run_portdiff --format text | sed -n '1p')

echo "file: $(git -C "$repo" cat-file -s source:data/big.txt) bytes, $lines lines; git -U0 counts: $(git -C "$repo" diff --numstat "$source_range" | cut -f1,2 | tr '\t' /) / $(git -C "$repo" diff --numstat "$target_range" | cut -f1,2 | tr '\t' /)"
echo "portdiff: $totals"
echo "median of $runs runs, seconds       wall   (ratio)   cpu    (ratio)"
echo "  floor: two git diff -U0          $floor_wall             $floor_cpu"
echo "  portdiff --format json           $json_wall  ($(ratio "$json_wall" "$floor_wall"))   $json_cpu  ($(ratio "$json_cpu" "$floor_cpu"))"
echo "  portdiff --format md             $md_wall  ($(ratio "$md_wall" "$floor_wall"))   $md_cpu  ($(ratio "$md_cpu" "$floor_cpu"))"
echo "peak memory (max RSS), MiB: git diff -U0 source $git_source_rss, target $git_target_rss (larger $git_rss, both $((git_source_rss + git_target_rss)))"
echo "  portdiff json $json_rss ($(ratio "$json_rss" "$git_rss") the larger git run, $(ratio "$json_rss" $((git_source_rss + git_target_rss))) both)"
echo "  portdiff md   $md_rss ($(ratio "$md_rss" "$git_rss") the larger git run, $(ratio "$md_rss" $((git_source_rss + git_target_rss))) both)"
echo "git $(git --version | cut -d' ' -f3), libgit2 $(pkg-config --modversion libgit2 2>/dev/null || echo '?'), $(nproc) cores"
exit 0
fi

files=${FILES:-5000}
runs=${RUNS:-7}

# One fast-import stream:
#   base            FILES files of 40 lines
#   source          edits every file (3 lines changed, 2 added)
#   target-baseline the target branch's own drift: every 10th file differs at line 30
#   target          the same edit as source, except every 7th file (a different line)
#   target2         on its own drifted baseline, the same edit as source
#   target3         on base, the port of `target` (every 7th file differs)
awk -v n="$files" '
function blob(kind, i,   s, l) {
  s = ""
  for (l = 1; l <= 40; l++) {
    line = sprintf("file %d line %d: some ordinary source text", i, l)
    if ((kind == 1 || kind == 3) && l == 30 && i % 10 == 0) line = line " (target baseline)"
    if (kind >= 2 && (l == 5 || l == 17 || l == 33)) line = line " // edited"
    if (kind == 3 && l == 17 && i % 7 == 0) line = line " (port differs)"
    s = s line "\n"
    if (kind >= 2 && l == 20) s = s "added line one\nadded line two\n"
  }
  return s
}
function commit(ref, mark, msg, kind, parent,   i, d) {
  printf "commit %s\nmark :%d\ncommitter bench <bench@example.com> 1700000000 +0000\n", ref, mark
  printf "data %d\n%s\n", length(msg), msg
  if (parent != "") printf "from %s\n", parent
  for (i = 0; i < n; i++) {
    if (kind == 1 && i % 10 != 0) continue
    d = blob(kind, i)
    printf "M 100644 inline src/dir%03d/file%05d.c\ndata %d\n%s\n", i % 100, i, length(d), d
  }
}
BEGIN {
  commit("refs/heads/main", 1, "base", 0, "")
  commit("refs/heads/source", 2, "change", 2, ":1")
  commit("refs/heads/target", 3, "target baseline", 1, ":1")
  commit("refs/heads/target", 4, "change (port)", 3, "")
  commit("refs/heads/target2", 5, "target2 baseline", 1, ":1")
  commit("refs/heads/target2", 6, "change (port 2)", 2, "")
  commit("refs/heads/target3", 7, "change (port 3)", 3, ":1")
}' | git -C "$repo" fast-import --quiet

matrix_targets=("$target_range" "target2~1..target2" "main..target3")
pairwise() {
  local target
  for target in "${matrix_targets[@]}"; do
    "$portdiff" --repo "$repo" "$source_range" "$target" --format json
  done
}
matrix() { "$portdiff" --repo "$repo" "$source_range" "${matrix_targets[@]}" --format json; }

floor >/dev/null  # warm the page cache once, then measure
json >/dev/null
measure floor json md pairwise matrix
git_rss=$(peak_mib git -C "$repo" diff -U0 "$source_range")
json_rss=$(peak_mib "$portdiff" --repo "$repo" "$source_range" "$target_range" --format json)
matrix_rss=$(peak_mib "$portdiff" --repo "$repo" "$source_range" "${matrix_targets[@]}" --format json)
totals=$(run_portdiff --format text | sed -n '1p')

echo "files touched per patch: $(git -C "$repo" diff --name-only "$source_range" | wc -l) / $(git -C "$repo" diff --name-only "$target_range" | wc -l)"
echo "portdiff: $totals"
echo "median of $runs runs, seconds       wall   (ratio)   cpu    (ratio)"
echo "  floor: two git diff -U0          $floor_wall             $floor_cpu"
echo "  portdiff --format json           $json_wall  ($(ratio "$json_wall" "$floor_wall"))   $json_cpu  ($(ratio "$json_cpu" "$floor_cpu"))"
echo "  portdiff --format md             $md_wall  ($(ratio "$md_wall" "$floor_wall"))   $md_cpu  ($(ratio "$md_cpu" "$floor_cpu"))"
echo "  three pairwise runs (json)       $pairwise_wall             $pairwise_cpu"
echo "  matrix over 3 targets (json)     $matrix_wall  ($(ratio "$matrix_wall" "$pairwise_wall"))   $matrix_cpu  ($(ratio "$matrix_cpu" "$pairwise_cpu"))   vs the three pairwise runs"
echo "peak memory (max RSS): git diff -U0 one side $git_rss MiB; portdiff pair json $json_rss MiB; matrix json $matrix_rss MiB"
echo "git $(git --version | cut -d' ' -f3), libgit2 $(pkg-config --modversion libgit2 2>/dev/null || echo '?'), $(nproc) cores"
