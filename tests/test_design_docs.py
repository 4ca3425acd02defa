"""The design map and the field cases resolve inside the repository.

- Code and docs cite Notes, or docs/design.md's sections by name (``docs/design.md, "The
  anchor"``), never by number: every quoted section names a heading there.
- Every field case cited as "case C21", "cases C29, C33", "cases G1–G8" ..., and every id that
  tests/cases/README.md mentions, has a row in that file's table; the table has one row per id,
  numbered without gaps, and the tests it lists exist.
- Every Note cited is defined once, where the citation says.
- The supported torch versions are stated once, by pyproject.toml's dependency pin; README.md and
  docs/usage.md quote that pin exactly.
- No file cites a document outside the repository: no tracker "issue" numbers, no numbered
  source documents ("seed" plus a number or a behaviour label) and no paths into a sibling
  "shared" folder; what such a reference meant is in docs/design.md ("Where the design came
  from").
- README.md and the design map's layout show every source folder.

Reads text only: no compile, no extension.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ROOT / "docs" / "design.md"
CASES = ROOT / "tests" / "cases" / "README.md"

# Where references live; build outputs and virtual environments are not walked.
SCANNED_DIRS = ("src", "csrc", "tests", "docs", "tools", "bench", "scripts")
SCANNED_FILES = ("README.md", "CMakeLists.txt", "pyproject.toml")
TEXT_SUFFIXES = {
    ".py",
    ".pyi",
    ".h",
    ".hpp",
    ".cpp",
    ".cc",
    ".md",
    ".txt",
    ".sh",
    ".cmake",
    ".toml",
    ".json",
    ".yaml",
    ".yml",
    ".cfg",
    ".ini",
}
SKIPPED_PARTS = {"build", ".venv", "__pycache__", ".git", "node_modules", ".whl"}

# "design 2.1", "design §3", "docs/design.md 2.11": a numbered reference, no longer used.
DESIGN_NUMBER = re.compile(
    r"(?<![\w/-])(?:docs/design\.md|design)(?:,?\s+section)?\s+§?\d+(?:\.\d+)*\b", re.IGNORECASE
)
# 'docs/design.md, "The anchor"', '[design.md](design.md), "The anchor"'.
DESIGN_NAME = re.compile(r'design\.md\)?,\s+"([^"]+)"')
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.MULTILINE)

CASE_ID = r"[CGP]\d{1,2}"
# "case C21", "cases C29, C33", "cases C21–C25", "case C27/C28", "cases G1–G8".
CASE_REF = re.compile(
    rf"\bcases?\s+({CASE_ID}(?:\s*(?:,|/|and|or|to|–|-)\s*(?:{CASE_ID}|\d{{1,2}}\b))*)",
    re.IGNORECASE,
)
ID_OR_RANGE = re.compile(r"\b([CGP])(\d{1,2})(?:\s*[–-]\s*\1?(\d{1,2})\b)?")
TABLE_ROW = re.compile(r"^\|\s*([CGP]\d{1,2})\s*\|(.*)\|\s*$", re.MULTILINE)


# A tracker's issue number, a numbered source document or one of its behaviour labels, a path
# into a sibling "shared" folder: documents a newcomer cannot open.
OUTSIDE_REF = re.compile(
    r"\bissue\s+\d+\b|\bseed\s+(?:\d{3}|[A-D]\d{1,2})\b|\bthe\s+seed(?:'s)?\b|\.\./shared\b",
    re.IGNORECASE,
)


def scanned_files() -> list[Path]:
    files = [ROOT / name for name in SCANNED_FILES if (ROOT / name).is_file()]
    for top in SCANNED_DIRS:
        for path in sorted((ROOT / top).rglob("*")):
            rel = path.relative_to(ROOT)
            if (
                path.is_file()
                and path.suffix in TEXT_SUFFIXES
                and not SKIPPED_PARTS.intersection(rel.parts)
            ):
                files.append(path)
    return files


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def design_headings() -> list[str]:
    return HEADING.findall(read(DESIGN))


def ids_in(text: str) -> set[str]:
    """Case ids in ``text``, ranges ("C21–C25", "G1-8") expanded."""
    ids = set()
    for letter, first, last in ID_OR_RANGE.findall(text):
        lo = int(first)
        hi = int(last) if last and int(last) > lo else lo
        ids.update(f"{letter}{n}" for n in range(lo, hi + 1))
    return ids


def table_rows() -> list[tuple[str, str]]:
    return TABLE_ROW.findall(read(CASES))


def test_design_is_cited_by_section_name_not_number():
    headings = design_headings()
    numbered, unknown, named = [], [], 0
    for path in scanned_files():
        if path == Path(__file__).resolve():
            continue  # this file's own examples
        text = read(path)
        rel = path.relative_to(ROOT)
        numbered += [
            f"{rel}:{line_of(text, m.start())}: {m.group(0)!r}"
            for m in DESIGN_NUMBER.finditer(text)
        ]
        for m in DESIGN_NAME.finditer(text):
            named += 1
            if not any(h.startswith(m.group(1)) for h in headings):
                unknown.append(f"{rel}:{line_of(text, m.start())}: {m.group(1)!r}")
    assert named > 0, "no design section cited by name: the pattern no longer matches"
    assert not numbered, "cite a Note or the section's name:\n" + "\n".join(numbered)
    assert not unknown, "docs/design.md has no such section:\n" + "\n".join(unknown)


def test_no_reference_to_documents_outside_the_repository():
    found = []
    for path in scanned_files():
        rel = path.relative_to(ROOT).as_posix()
        text = read(path)
        found += [
            f"{rel}:{line_of(text, m.start())}: {m.group(0)!r}" for m in OUTSIDE_REF.finditer(text)
        ]
    assert not found, (
        "references to documents outside the repository (say what the thing is, "
        "or cite docs/design.md):\n" + "\n".join(found)
    )


def test_torch_versions_stated_as_pyproject_pins_them():
    pins = re.findall(r'"(torch[<>=!~][^"]*)"', read(ROOT / "pyproject.toml"))
    assert len(pins) == 1, f"pyproject.toml should pin torch once, found {pins}"
    for doc in ("README.md", "docs/usage.md"):
        text = read(ROOT / doc)
        assert f"`{pins[0]}`" in text, f"{doc} does not quote pyproject.toml's pin {pins[0]!r}"
        stated = set(re.findall(r"torch\s*[<>=]=?\s*\d[\d.]*", text)) - {pins[0]}
        assert not stated, f"{doc} states other torch bounds: {sorted(stated)}"


def test_case_table_has_one_row_per_id_without_gaps():
    ids = [cid for cid, _ in table_rows()]
    assert len(ids) == len(set(ids)), "duplicate rows: " + ", ".join(
        sorted({i for i in ids if ids.count(i) > 1})
    )
    for letter in "CGP":
        numbers = sorted(int(i[1:]) for i in ids if i[0] == letter)
        assert numbers == list(range(1, len(numbers) + 1)), f"{letter} ids have gaps: {numbers}"
    for cid, cells in table_rows():
        description, tests = (c.strip() for c in cells.rsplit("|", 1))
        assert description and tests, f"{cid}: empty cell"


def test_every_cited_case_has_a_row():
    table = {cid for cid, _ in table_rows()}
    found, missing = 0, []
    for path in scanned_files():
        text = read(path)
        if path == CASES:  # the index: every id it mentions, anywhere
            cited = [(0, cid) for cid in sorted(ids_in(text))]
        else:
            cited = [
                (m.start(), cid) for m in CASE_REF.finditer(text) for cid in ids_in(m.group(1))
            ]
        for offset, cid in cited:
            found += 1
            if cid not in table:
                missing.append(f"{path.relative_to(ROOT)}:{line_of(text, offset)}: {cid}")
    assert found > 0, "no case reference found: the pattern no longer matches the repository"
    assert not missing, "cases cited without a row in tests/cases/README.md:\n" + "\n".join(missing)


@pytest.mark.parametrize("cid,cells", table_rows())
def test_listed_tests_exist(cid, cells):
    for cell in re.findall(r"`([^`]+\.(?:py|cpp)(?:::[\w.:]+)?)`", cells):
        path, _, name = cell.partition("::")
        assert (ROOT / path).is_file(), f"{cid}: {path} does not exist"
        if not name:
            continue
        text = read(ROOT / path)
        if path.endswith(".py"):
            function = name.split("::")[-1]
            assert re.search(rf"^\s*(?:async\s+)?def {function}\(", text, re.MULTILINE), (
                f"{cid}: no test {function} in {path}"
            )
        else:
            suite, _, test = name.partition(".")
            assert re.search(rf"\bTEST(?:_F|_P)?\(\s*{suite},\s*{test}\s*\)", text), (
                f"{cid}: no test {suite}.{test} in {path}"
            )


SOURCE_FOLDERS = {"csrc/runtime", "csrc/bindings", "csrc/tests", "csrc/test_device",
                  "src/graphdispatch", "tests",
                  "tools/portdiff", "bench", "scripts", "docs"}  # fmt: skip


def test_design_layout_shows_every_source_folder():
    layout = read(DESIGN).split("\n## Layout", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([^`]+)/`", layout))
    assert SOURCE_FOLDERS <= named, (
        f"docs/design.md's Layout misses {sorted(SOURCE_FOLDERS - named)}"
    )


def test_readme_fits_two_screens_and_shows_every_folder():
    readme = read(ROOT / "README.md")
    assert len(readme.splitlines()) <= 100, "README.md is over 100 lines"
    layout = readme.split("\n## Layout", 1)[1]
    missing = sorted(f for f in SOURCE_FOLDERS if f"{f}/" not in layout)
    assert not missing, f"README.md's Layout does not show {missing}"
    assert all((ROOT / f).is_dir() for f in SOURCE_FOLDERS)


# A Note is defined where a comment line holds its name alone ("// Note [Aliasing]",
# " * Note [X]"; in Python, a docstring line too); everywhere else its name is a reference to
# that place.
NOTE_DEFINITION = re.compile(r"^[ \t]*(?://+|#|\*)[ \t]*Note \[([^\]]+)\][ \t]*$", re.M)
PY_NOTE_DEFINITION = re.compile(r"^[ \t]*(?:#[ \t]*)?Note \[([^\]]+)\][ \t]*$", re.M)
NOTE_REFERENCE = re.compile(
    r"Note \[([^\]]+)\](?:[ \t]+in(?:\s|//+|\*|#)+`?([\w./-]+\.(?:h|cpp|py|md))`?)?"
)


def note_name(text: str) -> str:
    # A reference may wrap: "Note [Moving\n// static inputs]" names "Moving static inputs".
    return re.sub(r"\s+(?:(?://+|#|\*)\s+)?", " ", text)


def test_every_note_cited_is_defined_once_where_it_is_said_to_be():
    defined: dict[str, list[str]] = {}
    references = []
    for path in scanned_files():
        if path == Path(__file__).resolve():
            continue  # this file's own examples
        text = read(path)
        rel = path.relative_to(ROOT).as_posix()
        starts = set()
        pattern = PY_NOTE_DEFINITION if path.suffix == ".py" else NOTE_DEFINITION
        for match in pattern.finditer(text):
            defined.setdefault(match.group(1), []).append(rel)
            starts.add(match.start(1))
        references += [
            (f"{rel}:{line_of(text, m.start())}", note_name(m.group(1)), m.group(2))
            for m in NOTE_REFERENCE.finditer(text)
            if m.start(1) not in starts
        ]
    assert len(references) > 20, "no Note reference found: the pattern no longer matches"
    twice = {name: files for name, files in defined.items() if len(files) > 1}
    assert not twice, f"Notes defined more than once: {twice}"
    wrong = [
        f"{where}: Note [{name}] " + (f"in {file}, defined in {defined[name]}" if file else "")
        for where, name, file in references
        if name not in defined or (file and Path(file).name != Path(defined[name][0]).name)
    ]
    assert not wrong, "Notes cited but not defined (there):\n" + "\n".join(wrong)
