"""Soak: many requests of the three tiny pipelines on the CPU graph; what the process holds over
time (case C87-C89, the soak of "never growing").

    .venv/bin/python bench/soak.py [--requests N] [--no-write]

The tiny SD, SD3 and Flux pipelines (graphdispatch.tiny_pipelines), each denoiser compiled with
``graph_only`` on the CPU graph, serve ``N`` requests each, interleaved, drawn from a seeded
stream: an image side of 16, 24 or 32 pixels (token counts that change), a guidance scale drawn
from [1, 9] (a new float nearly every request; the SD pipelines apply it outside the denoiser,
the tiny Flux has no guidance embedding), a new seed, and one request in 10 a bad one (prompt
embeddings one channel too wide: the denoiser raises, as eager does, in Dynamo's trace here).
After every round of requests it records the captured entries, the bytes they hold
(``stats()["entry_bytes"]``), the shared workspace and the process's resident memory (RSS). The
bound: entries, entry bytes and workspace flat after warm-up (every signature seen once), RSS
within 10 % of its value after warm-up. Bad requests must raise and must not cost their shape
its graph: the last round's requests replay.

Writes the section ``## Soak`` of bench/RESULTS.md and ``bench/plots/soak.png`` unless
``--no-write``.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys

import torch
from results_md import save_plot, write_section  # bench/ is on sys.path when run

import graphdispatch
from graphdispatch.tiny_pipelines import PIPELINES, build

SECTION = "## Soak"
SIDES = (16, 24, 32)
OPTIONS = {"graph_only": True, "device_graph": "cpu"}


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def request(tiny, rng: random.Random) -> tuple[dict, bool]:
    """The keyword arguments of one request, and whether it is a bad one."""
    side = rng.choice(SIDES)
    kwargs = tiny.call_kwargs()
    kwargs.update(height=side, width=side, guidance_scale=rng.uniform(1.0, 9.0))
    kwargs["generator"] = torch.Generator().manual_seed(rng.randrange(2**31))
    bad = rng.random() < 0.1
    if bad:  # embeddings one channel too wide: the denoiser's first projection raises
        for key in ("prompt_embeds", "negative_prompt_embeds"):
            if kwargs.get(key) is not None:
                embeds = kwargs[key]
                kwargs[key] = torch.cat([embeds, embeds[..., :1]], dim=-1)
    return kwargs, bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=60, help="requests per pipeline")
    parser.add_argument("--rounds", type=int, default=10, help="samples over the run")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rng = random.Random(0)
    pipes = [build(key, torch.device("cpu"), steps=2) for key in PIPELINES]
    for tiny in pipes:
        tiny.model = torch.compile(tiny.model, backend="graphdispatch", options=OPTIONS)
    per_round = max(1, args.requests // args.rounds)
    samples, raised, wrong_errors = [], 0, 0
    last_round = {}
    for r in range(args.rounds):
        before = graphdispatch.stats()
        for _ in range(per_round):
            for tiny in pipes:
                kwargs, bad = request(tiny, rng)
                try:
                    with torch.no_grad():
                        tiny.pipe(**kwargs)
                    wrong_errors += bad  # a bad request must raise
                except RuntimeError:
                    raised += 1
                    wrong_errors += not bad
        s = graphdispatch.stats()
        samples.append(
            {
                "requests": (r + 1) * per_round * len(pipes),
                "entries": s["entries"],
                "entry_bytes": s["entry_bytes"],
                "workspace_bytes": s["workspace_bytes"],
                "rss": rss_bytes(),
            }
        )
        last_round = {
            k: s[k] - before[k] for k in ("captures", "replays", "cache_misses", "cache_hits")
        }
        print(samples[-1], last_round, flush=True)
    warm = samples[len(samples) // 2]
    last = samples[-1]
    flat = all(last[k] == warm[k] for k in ("entries", "entry_bytes", "workspace_bytes"))
    rss_growth = last["rss"] / warm["rss"]
    lines = [
        SECTION,
        "",
        f"`.venv/bin/python bench/soak.py --requests {args.requests} --rounds {args.rounds}` "
        f"({platform.machine()}, torch {torch.__version__}, one intra-op thread): the tiny SD, "
        f"SD3 and Flux pipelines on the CPU graph, {args.requests} requests each (sides "
        f"{', '.join(map(str, SIDES))}, a guidance scale from [1, 9], a new seed, one in 10 a "
        f"bad request: embeddings too wide), {raised} raised, {wrong_errors} raised where eager "
        f"would not or the reverse. Bound: entries, entry bytes and workspace flat from "
        f"half-way, RSS within 10 %.",
        "",
        "| requests | entries | entry bytes | workspace bytes | RSS (MB) |",
        "|---|---|---|---|---|",
        *(
            f"| {x['requests']} | {x['entries']} | {x['entry_bytes']} | {x['workspace_bytes']} "
            f"| {x['rss'] / 2**20:.1f} |"
            for x in samples
        ),
        "",
        f"From half-way to the end: entries, entry bytes and workspace "
        f"{'flat' if flat else 'NOT flat'}; RSS {rss_growth:.3f}x. The last round: "
        f"{last_round['captures']} captures, {last_round['replays']} replays.",
    ]
    body = "\n".join(lines) + "\n"
    print(body)
    if not args.no_write:

        def draw(ax):
            x = [s["requests"] for s in samples]
            ax.plot(x, [s["entry_bytes"] / 2**20 for s in samples], marker="o", label="entry MB")
            ax.plot(
                x, [s["workspace_bytes"] / 2**20 for s in samples], marker="o", label="workspace MB"
            )
            ax.plot(x, [s["rss"] / 2**20 / 10 for s in samples], marker="o", label="RSS MB / 10")
            ax.plot(x, [s["entries"] for s in samples], marker="s", label="entries")
            ax.set_xlabel("requests")
            ax.legend()

        path = save_plot("soak", draw)
        write_section(body + f"\n![entries, bytes and RSS over the soak]({path})\n")
    ok = flat and rss_growth <= 1.1 and wrong_errors == 0 and last_round["captures"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
