"""bench/RESULTS.md, one section per measurement: each bench replaces its own, the others stay."""

from __future__ import annotations

import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def write_section(body: str) -> None:
    """Puts ``body`` in RESULTS.md in place of the section its first line (``## Name``) names,
    up to the next ``## `` heading; appends it when there is none."""
    heading = body.split("\n", 1)[0]
    if not heading.startswith("## "):
        raise ValueError(f"body: expected a first line '## <section>', got {heading!r}")
    text = RESULTS.read_text() if RESULTS.exists() else ""
    pattern = re.compile(rf"^{re.escape(heading)}\n.*?(?=^## |\Z)", re.M | re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: body.rstrip("\n") + "\n\n", text, count=1)
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + body
    RESULTS.write_text(text.rstrip("\n") + "\n")
