"""One rank of case C51, started by torchrun: diffusers' context parallelism (Ulysses, 2 ranks,
gloo) on a tiny Flux transformer, compiled with graphdispatch on the graph route (the graph
kind given), beside the same parallel model run eagerly.

Arguments: the report folder and the graph kind. Writes ``<out>/rank<r>.json``: whether each
call's output equals eager context parallelism bit for bit, and graphdispatch.stats().
"""

import json
import os
import sys

import torch
import torch.distributed as dist

import graphdispatch
from graphdispatch.tiny_pipelines import tiny_flux_inputs, tiny_flux_transformer


def main(out_dir: str, device_graph: str) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    # diffusers places each rank on device `rank % torch.accelerator.device_count()`, which
    # divides by zero on a CPU-only host (no accelerator: a count of 0). The CPU is the one
    # device every rank uses here.
    torch.accelerator.device_count = lambda: 1
    from diffusers import ContextParallelConfig

    torch.manual_seed(0)  # the same weights and inputs on every rank, as a real job loads them
    model = tiny_flux_transformer().eval()
    model.enable_parallelism(config=ContextParallelConfig(ulysses_degree=2))
    calls = [tiny_flux_inputs(t) for t in (0.9, 0.6, 0.3, 0.1)]
    with torch.no_grad():
        expected = [model(**kwargs)[0] for kwargs in calls]
        compiled = torch.compile(
            model,
            backend="graphdispatch",
            dynamic=False,
            options={"graph_only": True, "device_graph": device_graph},
        )
        equal = [torch.equal(compiled(**kwargs)[0], want) for kwargs, want in zip(calls, expected)]
    with open(f"{out_dir}/rank{rank}.json", "w") as f:
        json.dump({"rank": rank, "equal": equal, "stats": graphdispatch.stats()}, f)
    # No rank leaves while the other still computes: its exit closes the sockets that rank's
    # collectives read ("Connection closed by peer").
    dist.barrier()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
    # The report is written and both ranks are past the barrier: leave without tearing gloo
    # down. Ranks have aborted in its teardown ("terminate called without an active exception",
    # SIGABRT) in full-suite runs on a loaded 2-core machine, never when the test ran alone:
    # gloo's threads hold work whose tensors take the GIL when freed (pytorch/pytorch#179291).
    os._exit(0)
