"""bench/RESULTS.md, one section per measurement: each bench replaces its own, the others stay;
the plots beside it, in bench/plots/."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


PLOTS = RESULTS.parent / "plots"


def save_plot(name: str, draw: Callable[[Any], None], size: tuple[float, float] = (8, 4.5)) -> str:
    """Draws a figure with ``draw(ax)`` (matplotlib, headless) and saves it as
    bench/plots/<name>.png; returns its path relative to RESULTS.md, for the section's link."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    PLOTS.mkdir(exist_ok=True)
    fig, ax = plt.subplots(figsize=size)
    try:
        draw(ax)
        fig.tight_layout()
        fig.savefig(PLOTS / f"{name}.png", dpi=100)
    finally:
        plt.close(fig)
    return f"plots/{name}.png"
