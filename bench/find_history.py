"""Writes a git fast-import stream of a history the size of ansible's (P16): a main line
and 47 release branches, 11,905 commits in all, every commit editing one to three of
3,000 files. One fix lands on main (tag bench-fix); branches forked
before it carry a port of it (a clean cherry-pick onto their own revision of the
file, so found by the stable patch-id), branches forked after it contain it.

Usage: python3 bench/find_history.py | git fast-import --quiet
"""

import random
import sys

FILES, MAIN, BRANCHES, PER_BRANCH = 3000, 6030, 47, 125
FIX_AT = 4000  # main commit that is the fix
out = sys.stdout.buffer
rng = random.Random(7)


def content(k, rev, fixed):
    lines = [f"file {k} line {n}: ordinary text\n" for n in range(1, 41)]
    lines[19] = f"file {k} revision {rev}\n"
    if fixed:
        lines.insert(10, "    fixed = True\n")
    return "".join(lines).encode()


mark = 0
when = 1_600_000_000


def commit(ref, parent, message, edits):
    """edits: {path: bytes}; returns the commit's mark."""
    global mark, when
    mark += 1
    when += 60
    msg = message.encode()
    out.write(f"commit {ref}\nmark :{mark}\n".encode())
    out.write(f"committer bench <bench@example.com> {when} +0000\n".encode())
    out.write(b"data %d\n%s\n" % (len(msg), msg))
    if parent:
        out.write(f"from :{parent}\n".encode())
    for path, data in edits.items():
        out.write(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")
    return mark


def path(k):
    return f"lib/dir{k % 30:02d}/module{k:04d}.py"


FIX_FILE = 1234
state = {k: (0, False) for k in range(FILES)}  # main's files: (revision, fixed)
base = commit(
    "refs/heads/main", None, "base", {path(k): content(k, 0, False) for k in range(FILES)}
)
main_marks, main_states, fix_mark = [base], [dict(state)], None
for i in range(1, MAIN):
    if i == FIX_AT:
        rev, _ = state[FIX_FILE]
        state[FIX_FILE] = (rev, True)
        fix_mark = commit(
            "refs/heads/main",
            main_marks[-1],
            "fix: the bench fix",
            {path(FIX_FILE): content(FIX_FILE, rev, True)},
        )
    else:
        edits = {}
        for k in rng.sample(range(FILES), rng.randint(1, 3)):
            if k == FIX_FILE:
                continue
            rev, fixed = state[k]
            state[k] = (i, fixed)
            edits[path(k)] = content(k, i, fixed)
        commit("refs/heads/main", main_marks[-1], f"main change {i}", edits)
    main_marks.append(mark)
    main_states.append(dict(state))

for b in range(BRANCHES):
    fork = 1 + b * (MAIN - 2) // BRANCHES
    ref = f"refs/heads/release-{b // 10}.{b % 10}"
    files = dict(main_states[fork])
    parent = main_marks[fork]
    port_at = PER_BRANCH // 2 if fork < FIX_AT else None
    for j in range(PER_BRANCH):
        if j == port_at:
            rev, _ = files[FIX_FILE]
            files[FIX_FILE] = (rev, True)
            parent = commit(
                ref, parent, "fix: the bench fix", {path(FIX_FILE): content(FIX_FILE, rev, True)}
            )
            continue
        edits = {}
        for k in rng.sample(range(FILES), rng.randint(1, 3)):
            if k == FIX_FILE:
                continue
            rev, fixed = files[k]
            files[k] = (100000 + b * 1000 + j, fixed)
            edits[path(k)] = content(k, files[k][0], fixed)
        parent = commit(ref, parent, f"release {b} change {j}", edits)
out.write(f"reset refs/tags/bench-fix\nfrom :{fix_mark}\n".encode())
