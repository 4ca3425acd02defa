"""One rank of case C26, started by torchrun: a compiled forward with a functional all_reduce,
on the graph route (the graph kind given, gloo), beside the same module run eagerly.

Arguments: the report folder and the graph kind. Writes ``<out>/rank<r>.json``: the per-call max
|compiled - eager|, the cache-key order of the captures (shapes in call order) and
graphdispatch.stats().
"""

import json
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

import graphdispatch


class ReduceMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(8, 16)
        self.down = torch.nn.Linear(16, 8)

    def forward(self, x):
        # Tensor-parallel style: each rank's partial sum, reduced across ranks inside the graph.
        partial = self.down(torch.nn.functional.gelu(self.up(x)))
        return funcol.all_reduce(partial, "sum", dist.group.WORLD) + x


def main(out_dir: str, device_graph: str) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)  # different weights per rank: the reduction must really happen
    model = ReduceMLP().eval()
    # dynamic=False, as fixed-shape serving compiles: one graph per batch size.
    compiled = torch.compile(
        model,
        backend="graphdispatch",
        dynamic=False,
        options={"graph_only": True, "device_graph": device_graph},
    )
    diffs, shapes = [], []
    generator = torch.Generator().manual_seed(100 + rank)
    with torch.no_grad():
        for step in range(6):
            batch = 2 if step % 3 else 3  # two signatures, revisited
            x = torch.randn(batch, 8, generator=generator)
            got = compiled(x)
            expected = model(x)
            diffs.append((got - expected).abs().max().item())
            shapes.append(list(x.shape))
    stats = graphdispatch.stats()
    with open(f"{out_dir}/rank{rank}.json", "w") as f:
        json.dump({"rank": rank, "diffs": diffs, "shapes": shapes, "stats": stats}, f)
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
