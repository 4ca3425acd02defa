"""The option, alias and environment tables of docs/usage.md, made from ``config.OPTIONS``.

Each table sits between ``<!-- generated: NAME -->`` and ``<!-- end generated -->`` in the
doc; ``.venv/bin/python scripts/option_tables.py`` rewrites them, and tests/test_option_layers.py
checks that the doc holds what this module makes, so an option is described once, in its
``Option`` record.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from graphdispatch import config

USAGE = Path(__file__).resolve().parents[1] / "docs" / "usage.md"
_REGION = re.compile(r"(<!-- generated: (\w+) -->\n).*?(<!-- end generated -->)", re.S)


def _type(option: config.Option) -> str:
    if option.choices:
        return " \\| ".join(f'`"{choice}"`' for choice in option.choices)
    if option.type is int:
        return "int ≥ 0"
    if option.type is float:
        return "float ≥ 0, finite"
    if option.type is tuple:
        return "list or tuple of callables"
    return option.type.__name__


def _default(option: config.Option) -> str:
    if option.type is str:
        return f'`"{option.default}"`'
    return f"`{option.default:g}`" if option.type is float else f"`{option.default}`"


def tables() -> dict[str, str]:
    """{region name: its Markdown table}: ``options``, ``aliases``, ``environment``."""
    options = ["| option | type | default | meaning |", "|---|---|---|---|"]
    options += [
        f"| `{o.name}` | {_type(o)} | {_default(o)} | {o.doc.replace('|', chr(92) + '|')} |"
        for o in config.OPTIONS
    ]
    aliases = ["| alias | option |", "|---|---|"]
    aliases += [f"| `{alias}` | `{name}` |" for alias, name in config.ALIASES.items()]
    environment = ["| variable | option |", "|---|---|"]
    environment += [
        f"| `{config.ENV_PREFIX}{o.name.upper()}` | `{o.name}` |"
        for o in config.OPTIONS
        if o.type is not tuple  # callables: no environment variable holds one
    ]
    return {
        "options": "\n".join(options),
        "aliases": "\n".join(aliases),
        "environment": "\n".join(environment),
    }


def regions(text: str) -> dict[str, str]:
    """{region name: what ``text`` holds between its markers, without the final newline}."""
    return {m.group(2): text[m.end(1) : m.start(3)].rstrip("\n") for m in _REGION.finditer(text)}


def write(path: Path = USAGE) -> None:
    made = tables()
    text = path.read_text(encoding="utf-8")
    path.write_text(
        _REGION.sub(lambda m: m.group(1) + made[m.group(2)] + "\n" + m.group(3), text),
        encoding="utf-8",
    )


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else USAGE)
