"""Writes a git fast-import stream of a history the size of ansible's (P16): a main line
and 47 release branches, 11,905 commits in all, every commit editing one to three of
3,000 files. One fix lands on main (tag bench-fix); branches forked
before it carry a port of it (a clean cherry-pick onto their own revision of the
file, so found by the stable patch-id), branches forked after it contain it.

Usage: python3 bench/find_history.py | git fast-import --quiet

With --audit [COMMITS]: instead, a release branch's history for the audit bench: a
base of 400 files, then COMMITS commits on main (default 300), each setting one line
in one to three files; a branch `release` forked at the base (tag bench-fork) with
20 commits of its own drift, then a port of two in three of main's commits — a
cherry-pick onto its own revision of the files (every tenth by hand, with other
lines: only its subject is the same, a hint) — and a commit of its own after every
fifteenth.

Usage: python3 bench/find_history.py --audit [COMMITS] | git fast-import --quiet
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


def audit_history(COMMITS):
    """The --audit history (see the module docstring)."""
    FILES, LINES = 400, 40
    out = sys.stdout.buffer
    rng = random.Random(11)
    clock = {"mark": 0, "when": 1_700_000_000}

    def text(lines):
        return "".join(line + "\n" for line in lines).encode()

    def commit(ref, message, changes, parent=None):
        """One commit of `changes` (file index -> lines); returns its mark."""
        clock["mark"] += 1
        clock["when"] += 60
        mark, when = clock["mark"], clock["when"]
        msg = message.encode()
        out.write(f"commit {ref}\nmark :{mark}\n".encode())
        out.write(f"committer bench <bench@example.com> {when} +0000\n".encode())
        out.write(b"data %d\n%s\n" % (len(msg), msg))
        if parent is not None:
            out.write(f"from :{parent}\n".encode())
        for k, lines in sorted(changes.items()):
            data = text(lines)
            out.write(f"M 100644 inline src/mod{k % 20:02d}/file{k:04d}.py\n".encode())
            out.write(b"data %d\n%s\n" % (len(data), data))
        return mark

    main = {k: [f"file {k} line {n}: ordinary text" for n in range(LINES)] for k in range(FILES)}
    base = commit("refs/heads/main", "base", {k: list(v) for k, v in main.items()})
    out.write(f"reset refs/tags/bench-fork\nfrom :{base}\n".encode())
    release = {k: list(v) for k, v in main.items()}

    edits = []  # per main commit: (mark, subject, {file: (line, new text)})
    for i in range(COMMITS):
        files = rng.sample(range(FILES), rng.randint(1, 3))
        change = {}
        for k in files:
            line = rng.randrange(LINES)
            main[k][line] = f"file {k} line {line}: main change {i}"
            change[k] = (line, main[k][line])
        subject = f"main change {i}: {' '.join(str(k) for k in files)}"
        m = commit("refs/heads/main", subject, {k: main[k] for k in files})
        edits.append((m, subject, change))

    commit("refs/heads/release", "release: drift 0", {0: release[0]}, parent=base)
    for d in range(1, 20):
        k = rng.randrange(FILES)
        release[k][LINES - 1] = f"file {k}: release drift {d}"
        commit("refs/heads/release", f"release: drift {d}", {k: release[k]})
    for i, (_mark, subject, change) in enumerate(edits):
        if i % 3 == 2:
            continue  # not ported
        message = subject
        for k, (line, new) in change.items():
            release[k][line] = new if i % 10 != 0 else new + " (by hand)"
        commit("refs/heads/release", message, {k: release[k] for k in change})
        if i % 15 == 14:
            k = rng.randrange(FILES)
            release[k][1] = f"file {k}: release only {i}"
            commit("refs/heads/release", f"release only {i}", {k: release[k]})


if sys.argv[1:2] == ["--audit"]:
    audit_history(int(sys.argv[2]) if len(sys.argv) > 2 else 300)
    sys.exit(0)

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
