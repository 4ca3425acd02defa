"""Builds a history at Linux-stable scale for the audit bench, in the git
repository given: a main line of COMMITS commits (default 12,000) over a base of
2,000 files, and 5 release branches forked from it (linux-5.0.y ... linux-5.4.y)
that carry ports of one in eight of main's later commits, marked the ways large
projects mark them, in a fixed cycle:
  clean pick with `(cherry picked from commit X)`; clean pick without a mark (only
  the patch-id); clean pick with `commit X upstream.` (Linux stable); a pick edited
  by hand with `[ Upstream commit X ]`; a pick edited by hand sharing the main
  commit's Gerrit `Change-Id:`; a clean pick as patchback writes it (`[PR #N/X
  backport][5.y]`); a clean pick whose trailer names a pre-rebase SHA that is not
  in the repository; an edit by hand with the same subject and no mark (a hint);
  a squash of two consecutive main commits with both trailers; a clean `-x` pick.
Every main commit carries a Change-Id (as under Gerrit). Each release also has 60
commits of its own (one in four changes the last line of a file, its baseline
drift). Every main commit sets one line in one or two files; one in fifty is titled
"doc fixes" (a generic subject, P37).

The trailers need the main commits' SHAs, so the stream is fed to `git fast-import`
here and the SHAs read back with its `get-mark` command.

Usage: python3 bench/kernel_history.py REPO [COMMITS]
Writes tags bench-base (the base) and branches main, linux-5.0.y ... linux-5.4.y.
"""

import random
import subprocess
import sys

FILES, LINES, RELEASES, PORT_EVERY, OWN = 2000, 40, 5, 8, 60


def main():
    repo = sys.argv[1]
    commits = int(sys.argv[2]) if len(sys.argv) > 2 else 12000
    rng = random.Random(40)
    importer = subprocess.Popen(
        ["git", "-C", repo, "fast-import", "--quiet"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    out, back = importer.stdin, importer.stdout
    clock = {"mark": 0, "when": 1_600_000_000}

    def path(k):
        return f"drivers/sub{k % 40:02d}/dev{k:04d}.c"

    def commit(ref, message, changes, parent=None):
        """One commit of `changes` (file -> lines); returns its mark."""
        clock["mark"] += 1
        clock["when"] += 30
        mark, msg = clock["mark"], message.encode()
        out.write(f"commit {ref}\nmark :{mark}\n".encode())
        out.write(f"committer bench <bench@example.com> {clock['when']} +0000\n".encode())
        out.write(b"data %d\n%s\n" % (len(msg), msg))
        if parent is not None:
            out.write(f"from :{parent}\n".encode())
        for k, lines in sorted(changes.items()):
            data = "".join(line + "\n" for line in lines).encode()
            out.write(f"M 100644 inline {path(k)}\ndata {len(data)}\n".encode() + data + b"\n")
        return mark

    def sha(mark):
        out.write(f"get-mark :{mark}\n".encode())
        out.flush()
        return back.readline().decode().strip()

    state = {k: [f"dev {k} line {n}: ordinary text" for n in range(LINES)] for k in range(FILES)}
    base = commit("refs/heads/main", "base", {k: list(v) for k, v in state.items()})
    out.write(f"reset refs/tags/bench-base\nfrom :{base}\n".encode())

    forks = [commits // 12 + r * (commits // 6) for r in range(RELEASES)]
    snapshots = {}  # fork index -> (mark, files)
    edits = []  # per main commit: (mark, subject, change-id, {file: (line, text)})
    for i in range(commits):
        files = rng.sample(range(FILES), rng.randint(1, 2))
        change = {}
        for k in files:
            line = rng.randrange(LINES - 1)
            state[k][line] = f"dev {k} line {line}: main change {i}"
            change[k] = (line, state[k][line])
        subject = "doc fixes" if i % 50 == 49 else f"sub{files[0] % 40:02d}: main change {i}"
        change_id = f"I{rng.getrandbits(160):040x}"
        message = f"{subject}\n\nChange-Id: {change_id}\n"
        mark = commit("refs/heads/main", message, {k: state[k] for k in files})
        edits.append((mark, subject, change_id, change))
        if i in forks:
            snapshots[i] = (mark, {k: list(v) for k, v in state.items()})

    for r, fork in enumerate(forks):
        ref = f"refs/heads/linux-5.{r}.y"
        parent, files = snapshots[fork]
        own_every = max(1, (commits - fork - 1) // OWN)
        first, j = True, 0
        pending = list(range(fork + 1, commits))
        skip = set()
        for i in pending:
            if (i - fork) % own_every == 0:  # a commit of the release's own
                k = rng.randrange(FILES)
                at = LINES - 1 if j % 4 == 0 else rng.randrange(LINES - 1)
                files[k][at] = f"dev {k} line {at}: 5.{r}.y only {i}"
                commit(ref, f"5.{r}.y: own change {i}", {k: files[k]}, parent if first else None)
                first = False
                j += 1
            if (i - fork) % PORT_EVERY != 0 or i in skip:
                continue
            mark, subject, change_id, change = edits[i]
            kind = ((i - fork) // PORT_EVERY) % 10
            upstream = sha(mark)
            by_hand = kind in (3, 4, 7)
            touched = dict(change)
            if kind == 8 and i + 1 < commits:  # a squash of this commit and the next
                skip.add(i + 1)
                touched.update(edits[i + 1][3])
            for k, (line, text) in touched.items():
                files[k][line] = text + " (backported by hand)" if by_hand else text
            if kind == 8 and i + 1 < commits:
                for k, (line, text) in edits[i + 1][3].items():
                    files[k][line] = text
            if kind in (0, 9):
                message = f"{subject}\n\n(cherry picked from commit {upstream})\n"
            elif kind == 1:
                message = subject
            elif kind == 2:
                message = f"{subject}\n\ncommit {upstream} upstream.\n"
            elif kind == 3:
                message = f"{subject} [5.{r}]\n\n[ Upstream commit {upstream} ]\n"
            elif kind == 4:
                message = f"{subject}\n\nChange-Id: {change_id}\n"
            elif kind == 5:
                message = f"[PR #{i}/{upstream[:8]} backport][5.{r}] {subject}\n"
            elif kind == 6:
                message = f"{subject}\n\n(cherry picked from commit {rng.getrandbits(160):040x})\n"
            elif kind == 7:
                message = f"[5.{r}] {subject}"
            else:
                message = (
                    f"backport {subject} and the next\n\n(cherry picked from commit {upstream})\n"
                    f"(cherry picked from commit {sha(edits[i + 1][0])})\n"
                )
            commit(ref, message, {k: files[k] for k in touched}, parent if first else None)
            first = False
    out.close()
    importer.wait()
    if importer.returncode != 0:
        sys.exit(importer.returncode)


if __name__ == "__main__":
    main()
