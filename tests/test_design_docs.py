"""The design and the field cases resolve inside the repository.

- Every "design N.N" reference (also "design §3", "design 2.8, 2.9", "docs/design.md 2.11") in
  the sources, tests, docs and tools names a numbered section of docs/design.md.
- Every field case cited as "case C21", "cases C29, C33", "cases G1–G8" ..., and every id that
  tests/cases/README.md mentions, has a row in that file's table; the table has one row per id,
  numbered without gaps, and the tests it lists exist.
- The supported torch versions are stated once, by pyproject.toml's dependency pin; README.md and
  docs/usage.md quote that pin exactly.
- No file cites a document outside the repository: no tracker "issue" numbers, no numbered
  source documents ("seed" plus a number or a behaviour label) and no paths into a sibling
  "shared" folder; what such a reference meant is in docs/design.md (section 6 for the systems
  the design started from).

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

NUMBER = r"§?\d+(?:\.\d+)*"
# "design 2.1", "design §3", "design 2.8, 2.9", "design 2.8 and 2.9", "docs/design.md 2.11".
DESIGN_REF = re.compile(
    rf"(?<![\w/-])(?:docs/design\.md|design)(?:,?\s+section)?\s+({NUMBER}(?:\s*(?:,|and|/)\s*{NUMBER})*)",
    re.IGNORECASE,
)
HEADING = re.compile(r"^#{1,6}\s+(\d+(?:\.\d+)*)\s", re.MULTILINE)

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


def design_sections() -> set[str]:
    return set(HEADING.findall(read(DESIGN)))


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


def test_design_has_its_sections():
    sections = design_sections()
    # The numbers the rest of the repository cites: keep them when the document changes.
    expected = {
        "1",
        "2",
        "3",
        "4",
        "5",
        "6",
        "6.1",
        "6.2",
        *(f"2.{n}" for n in range(1, 12)),
        *(f"2.4.{n}" for n in range(1, 7)),
    }
    assert expected <= sections, f"docs/design.md misses sections {sorted(expected - sections)}"


def test_every_design_reference_names_a_section():
    sections = design_sections()
    found, missing = 0, []
    for path in scanned_files():
        text = read(path)
        for match in DESIGN_REF.finditer(text):
            for number in re.findall(r"\d+(?:\.\d+)*", match.group(1)):
                found += 1
                if number not in sections:
                    missing.append(
                        f"{path.relative_to(ROOT)}:{line_of(text, match.start())}: "
                        f"{match.group(0)!r} -> {number}"
                    )
    assert found > 0, "no design reference found: the pattern no longer matches the repository"
    assert not missing, "references to sections docs/design.md lacks:\n" + "\n".join(missing)


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


def test_design_layout_names_every_source_file():
    # A file stem in backticks in the layout section names it: `entry` for entry.h/.cpp,
    # `compat/mindiesd` for a subpackage's module, `verify.py` where the folder lists file names.
    layout = read(ROOT / "docs" / "design.md").split("\n## 7 Layout", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([^`]+)`", layout))
    missing = []
    for folder, pattern in (
        ("csrc/runtime", "**/*.[hc]*"),
        ("csrc/bindings", "*.[hc]*"),
        ("src/graphdispatch", "**/*.py*"),
        ("bench", "*.*"),
        ("scripts", "*.*"),
    ):
        for path in sorted((ROOT / folder).glob(pattern)):
            rel = path.relative_to(ROOT / folder)
            stem = rel.with_suffix("").as_posix()
            if rel.name == "__init__.py" or "__pycache__" in rel.parts:
                continue
            if not {stem, rel.as_posix(), rel.name, path.stem} & named:
                missing.append(f"{folder}/{rel.as_posix()}")
    assert not missing, "docs/design.md's layout table does not name:\n" + "\n".join(missing)


def test_readme_fits_two_screens_and_shows_every_folder():
    readme = read(ROOT / "README.md")
    assert len(readme.splitlines()) <= 100, "README.md is over 100 lines"
    layout = readme.split("\n## Layout", 1)[1]
    folders = {"csrc/runtime", "csrc/bindings", "csrc/tests", "src/graphdispatch", "tests",
               "tools/portdiff", "bench", "scripts", "docs"}  # fmt: skip
    missing = sorted(f for f in folders if f"{f}/" not in layout)
    assert not missing, f"README.md's Layout does not show {missing}"
    assert all((ROOT / f).is_dir() for f in folders)


# A Note is defined where a comment line holds its name alone ("// Note [Aliasing]",
# " * Note [X]"); everywhere else its name is a reference to that place.
NOTE_DEFINITION = re.compile(r"^[ \t]*(?://+|#|\*)[ \t]*Note \[([^\]]+)\][ \t]*$", re.M)
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
        for match in NOTE_DEFINITION.finditer(text):
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
