#!/usr/bin/env bash
# Builds a demo repository with four fixes on main and two release branches, then
# runs `portdiff audit` on it (README: "Auditing a whole branch"; a test checks that
# the README shows exactly this output). Fixed names and dates make the SHAs stable.
#   release-1  forked at base: "fix a" cherry-picked cleanly (identical), "add y"
#              picked with -x and changed by hand (different), "fix c" not ported,
#              a change of its own under the subject "[1.x] fix i (#7)" (a hint), and
#              one with no source
#   release-2  forked after "fix a" (contained): "fix c" picked cleanly, "add y" and
#              "fix i" not ported, one commit with no source
#
# Usage: tools/portdiff/example_audit.sh [PORTDIFF_BINARY] [audit options...]
#   default binary build/portdiff/portdiff; default options --format text
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
commit() { git add -A && git commit -q -m "$1"; }

git init -q -b main
printf 'a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n' >"$repo/f.py"
printf 'x\n' >"$repo/g.py"
commit "base"
git tag base
git branch release-1
sed -i 's/^a$/A/' "$repo/f.py" && commit "fix a"
git branch release-2
sed -i 's/^c$/C/' "$repo/f.py" && commit "fix c"
printf 'x\ny\n' >"$repo/g.py" && commit "add y"
sed -i 's/^i$/I/' "$repo/f.py" && commit "fix i"

git checkout -q release-1
printf '1\n' >"$repo/own.py" && commit "release-1 only"
git cherry-pick main~3 >/dev/null
git cherry-pick -x main~1 >/dev/null
printf 'x\nY\n' >"$repo/g.py" && git commit -q --amend --no-edit -a
sed -i 's/^j$/J/' "$repo/f.py" && commit "[1.x] fix i (#7)"

git checkout -q release-2
printf '2\n' >"$repo/own.py" && commit "release-2 only"
git cherry-pick main~2 >/dev/null
git checkout -q main

[[ $# -gt 0 ]] || set -- --format text
cd "$repo" && "$portdiff" audit base..main --onto release-1 --onto release-2 "$@"
