#!/usr/bin/env bash
# Builds a demo repository with one fix on main and three release branches, then
# runs `portdiff find` on it (README: "Many ports at once"; a test checks that the
# README shows exactly this output). Fixed names and dates make the SHAs stable.
#   release-1  the fix cherry-picked cleanly, without -x    (found by patch-id)
#   release-2  a conflict resolved by hand, with -x         (found by its trailer)
#   release-3  no port
#
# Usage: tools/portdiff/example_ports.sh [PORTDIFF_BINARY] [find options...]
#   default binary build/portdiff/portdiff; default options --branches 'release-*'
set -euo pipefail

portdiff=$(realpath "${1:-build/portdiff/portdiff}")
shift || true
repo=$(mktemp -d)
trap 'rm -rf "$repo"' EXIT
export GIT_AUTHOR_NAME=dev GIT_AUTHOR_EMAIL=dev@example.com
export GIT_COMMITTER_NAME=dev GIT_COMMITTER_EMAIL=dev@example.com
export GIT_AUTHOR_DATE=2024-01-01T00:00:00Z GIT_COMMITTER_DATE=2024-01-01T00:00:00Z
export GIT_EDITOR=true
git() { command git -C "$repo" -c core.autocrlf=false -c commit.gpgsign=false "$@"; }

git init -q -b main
mkdir -p "$repo/src"
printf 'import os\n\nTIMEOUT = 10\n\n\ndef load(name):\n    return open(name).read()\n' >"$repo/src/loader.py"
printf 'DEBUG = False\n' >"$repo/src/config.py"
git add -A && git commit -q -m "base"
for branch in release-1 release-2 release-3; do git branch "$branch"; done

git checkout -q release-1
printf 'release 1\n' >"$repo/CHANGES"
git add CHANGES && git commit -q -m "release-1: changelog"
git checkout -q release-2   # this branch already changed the line the fix touches
sed -i 's/TIMEOUT = 10/TIMEOUT = 30  # slow mirrors/' "$repo/src/loader.py"
git commit -q -am "release-2: longer timeout"
git checkout -q release-3
printf 'DEBUG = False\nVERBOSE = False\n' >"$repo/src/config.py"
git commit -q -am "release-3: verbose flag"

git checkout -q main
sed -i 's/TIMEOUT = 10/TIMEOUT = 20/; s/    return open(name).read()/    with open(name) as f:\n        return f.read()/' "$repo/src/loader.py"
printf 'DEBUG = False\nLAZY = True\n' >"$repo/src/config.py"
git commit -q -am "loader: close files, lazy config"
fix=$(git rev-parse HEAD)

git checkout -q release-1
git cherry-pick "$fix" >/dev/null
git checkout -q release-2
if git cherry-pick -x "$fix" >/dev/null 2>&1; then
  echo "expected a conflict on release-2" >&2
  exit 1
fi
printf 'import os\n\nTIMEOUT = 30  # slow mirrors\n\n\ndef load(name):\n    with open(name) as f:\n        return f.read()\n' >"$repo/src/loader.py"
git add src/loader.py && git cherry-pick --continue >/dev/null

[[ $# -gt 0 ]] || set -- --branches 'release-*'
cd "$repo" && "$portdiff" find main "$@"
