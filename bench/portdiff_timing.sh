# Timing helpers the portdiff benches source (bash): a command's wall seconds, the median of the
# numbers on stdin, and the audit timed beside git's answer, interleaved.

# Wall seconds of running function or command $1, its output discarded.
seconds() {
  local start end
  start=$(date +%s.%N)
  "$1" >/dev/null
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# audit_beside_git GIT RUNS: the functions `audit` and GIT, each run once to warm the page
# cache, then RUNS times interleaved; their median seconds in audit_s and git_s.
audit_beside_git() {
  local git_fn=$1 runs=$2 samples i
  audit >/dev/null
  "$git_fn" >/dev/null
  samples=$(mktemp)
  for ((i = 0; i < runs; i++)); do
    echo "audit $(seconds audit)" >>"$samples"
    echo "git $(seconds "$git_fn")" >>"$samples"
  done
  audit_s=$(awk '$1 == "audit" { print $2 }' "$samples" | median)
  git_s=$(awk '$1 == "git" { print $2 }' "$samples" | median)
  rm -f "$samples"
}
