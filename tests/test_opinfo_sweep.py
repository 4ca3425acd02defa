"""Case C73, sized for CI: PyTorch's own OpInfo samples for a subset of ops, captured on the CPU
graph and replayed on new values, compared with eager byte for byte (tests/opinfo_sweep.py; the
full sweep's table is docs/opinfo-sweep.md)."""

from __future__ import annotations

import opinfo_sweep  # tests/ is on the path (pytest's prepend import mode)
import pytest

# Ops of the kinds the field cases found faults in (out= kernels, kernels that fill memory
# themselves, effect-only checks, integer indexing, lists of new tensors, layouts, conjugate
# views), and the common ones a transformer runs.
SUBSET = {
    "add", "mul", "div", "where", "clamp", "exp", "tanh", "sigmoid", "pow",
    "sum", "mean", "amax", "cumsum", "softmax", "log_softmax", "var_mean",
    "matmul", "mm", "bmm", "addmm", "baddbmm", "linalg.inv", "linalg.solve",
    "index_select", "gather", "take", "index_put", "__getitem__", "masked_fill",
    "cat", "stack", "flip", "roll", "sort", "topk", "split_with_sizes_copy", "unbind_copy",
    "nn.functional.binary_cross_entropy", "nn.functional.max_pool1d", "nn.functional.layer_norm",
    "nn.functional.group_norm", "nn.functional.gelu", "nn.functional.conv2d",
    "nn.functional.scaled_dot_product_attention", "nn.functional.embedding",
    "nn.functional.interpolate", "nn.functional.pad", "conj", "mH", "linalg.lu_solve",
}  # fmt: skip


def subset_ops():
    return [op for op in opinfo_sweep.op_db() if op.name in SUBSET]


@pytest.mark.parametrize("dtype", opinfo_sweep.DTYPES, ids=str)
def test_c73_opinfo_subset_replays_eagers_bytes(dtype):
    outcomes = opinfo_sweep.sweep(subset_ops(), (dtype,), limit=8)
    wrong = [o for o in outcomes if o.result == "wrong"]
    assert not wrong, wrong
    replayed = [o for o in outcomes if o.result == "replayed"]
    assert len(replayed) >= len(outcomes) // 2, [o for o in outcomes if o.result != "replayed"]
