"""What held in the third field round and must keep holding (tests/cases/README.md,
opening paragraph): each scenario on graph_only, values bit-exact to eager, replays counted.
First-Block-Cache with safe outputs is in tests/test_pipelines.py, compile_repeated_blocks in
test_budget.py, context parallelism in tests/distributed/test_ranks.py."""

import pytest
import torch
from cases_helpers import compiled, stats

from graphdispatch.tiny_pipelines import tiny_flux_inputs, tiny_flux_transformer


def settled(G, reference, *args, **kwargs):
    """Calls ``G`` three times: each equals ``reference`` bit for bit, and the last two replay
    without a capture (the first may capture: new weights, a recompile)."""
    with torch.no_grad():
        first = G(*args, **kwargs)
        expected = reference(*args, **kwargs)
        assert_equal(first, expected)
        before = stats()
        for _ in range(2):
            assert_equal(G(*args, **kwargs), expected)
    after = stats()
    assert after["captures"] == before["captures"], after
    assert after["replays"] == before["replays"] + 2 and after["fallbacks"] == {}, after


def assert_equal(got, expected):
    got, expected = (x[0] if isinstance(x, tuple) else x for x in (got, expected))
    assert torch.equal(got, expected), f"max |difference| {(got - expected).abs().max()}"


# ---- LoRA on a tiny Flux transformer (diffusers + peft) --------------------------------------


def tiny_flux():
    torch.manual_seed(0)
    return tiny_flux_transformer().eval()


FLUX_CALL = tiny_flux_inputs()


def lora_state_dict(seed, rank=4):
    """A LoRA of ``rank`` on every attention projection of ``tiny_flux``, in diffusers' format."""
    g = torch.Generator().manual_seed(seed)
    state = {}
    for block in ("transformer_blocks.0.attn", "single_transformer_blocks.0.attn"):
        for proj in ("to_q", "to_k", "to_v"):
            state[f"{block}.{proj}.lora_A.weight"] = torch.randn(rank, 16, generator=g) * 0.1
            state[f"{block}.{proj}.lora_B.weight"] = torch.randn(16, rank, generator=g) * 0.1
    return state


@pytest.fixture
def flux_with_lora():
    pytest.importorskip("diffusers")
    pytest.importorskip("peft")
    model = tiny_flux()

    def load(hotswap_ready=False):
        if hotswap_ready:
            model.enable_lora_hotswap(target_rank=8)
        model.load_lora_adapter(lora_state_dict(1), adapter_name="default", prefix=None)
        G = compiled(model)
        settled(G, model, **FLUX_CALL)
        return model, G

    return load


def lora_layers(model):
    return [m for m in model.modules() if hasattr(m, "lora_A") and "default" in m.lora_A]


def test_pin_lora_hotswap_replays_without_recapture(flux_with_lora):
    model, G = flux_with_lora(hotswap_ready=True)
    captures = stats()["captures"]
    model.load_lora_adapter(lora_state_dict(2), adapter_name="default", prefix=None, hotswap=True)
    settled(G, model, **FLUX_CALL)
    assert stats()["captures"] == captures  # the new LoRA's weights were copied in place


def test_pin_peft_scalings_changed_with_fill(flux_with_lora):
    model, G = flux_with_lora(hotswap_ready=True)  # hot-swap makes the scalings tensors
    captures = stats()["captures"]
    for layer in lora_layers(model):
        layer.scaling["default"].fill_(0.25)
    settled(G, model, **FLUX_CALL)
    assert stats()["captures"] == captures


def test_pin_lora_data_rebinding_captures_once_per_rebinding(flux_with_lora):
    model, G = flux_with_lora()
    g = torch.Generator().manual_seed(3)
    for _ in range(3):
        captures = stats()["captures"]
        for layer in lora_layers(model):
            weight = layer.lora_A["default"].weight
            weight.data = torch.randn(weight.shape, generator=g) * 0.1
        settled(G, model, **FLUX_CALL)
        assert stats()["captures"] == captures + 1


def test_pin_set_adapters_weights(flux_with_lora):
    # A new adapter weight is a float Dynamo makes dynamic: each value is captured once, keyed
    # on the value (case C70), on both graph kinds.
    model, G = flux_with_lora()
    for weight in (0.5, 1.5):
        model.set_adapters(["default"], weights=[weight])
        settled(G, model, **FLUX_CALL)


def test_pin_fuse_and_unfuse_lora(flux_with_lora):
    model, G = flux_with_lora()
    model.fuse_lora(lora_scale=0.7)
    settled(G, model, **FLUX_CALL)
    model.unfuse_lora()
    settled(G, model, **FLUX_CALL)


# ---- shapes and call patterns ----------------------------------------------------------------


class Block(torch.nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.norm = torch.nn.LayerNorm(dim)
        self.lin = torch.nn.Linear(dim, dim)

    def forward(self, x):
        return x + torch.tanh(self.lin(self.norm(x)))


def test_pin_one_block_chained_on_its_own_output_five_deep():
    block = Block()
    G = compiled(block)
    x = y = torch.randn(2, 8)
    with torch.no_grad():
        for _ in range(5):
            x, y = G(x), block(y)
            assert torch.equal(x, y)
    assert stats()["captures"] == 1 and stats()["replays"] == 5 and stats()["fallbacks"] == {}


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x):
        return torch.nn.functional.silu(self.conv(x))


def test_pin_dynamic_true_across_resolutions():
    model = ConvNet()
    G = torch.compile(
        model,
        backend="graphdispatch",
        dynamic=True,
        options={"graph_only": True, "device_graph": "emulated"},
    )
    with torch.no_grad():
        for size in (8, 16, 8, 16, 12):
            x = torch.randn(1, 4, size, size)
            assert torch.equal(G(x), model(x))
    s = stats()
    assert s["captures"] == 3 and s["replays"] == 5 and s["fallbacks"] == {}, s


def test_pin_cfg_batch_two_one_two_and_warmup_shape_then_serving_shape():
    model = ConvNet()
    G = compiled(model)
    with torch.no_grad():
        for batch in (2, 1, 2, 1, 1):  # CFG on, off, on; then served at the other shape
            x = torch.randn(batch, 4, 8, 8)
            assert torch.equal(G(x), model(x))
    s = stats()
    assert s["captures"] == 2 and s["replays"] == 5 and s["fallbacks"] == {}, s


class CachedRope(torch.nn.Module):
    """A RoPE table computed on first use and kept in a module dict, as several DiTs do."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.tables = {}

    def forward(self, x):
        n = x.shape[1]
        if n not in self.tables:
            angles = torch.arange(n, dtype=torch.float32)[:, None] * torch.arange(1, 9) / 8
            self.tables[n] = torch.cos(angles)
        return self.lin(x) * self.tables[n]


def test_pin_rope_table_cached_in_a_module_dict():
    model = CachedRope()
    G = compiled(model)
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        assert torch.equal(G(x), model(x))  # builds the table: the next call recompiles on it
    settled(G, model, x)


def test_pin_two_experts_alternating():
    high, low = Block(), Block()
    G_high, G_low = compiled(high), compiled(low)
    x = torch.randn(2, 8)
    with torch.no_grad():
        for step in range(6):
            expert, G = (high, G_high) if step % 2 == 0 else (low, G_low)
            assert torch.equal(G(x), expert(x))
    s = stats()
    assert s["captures"] == 2 and s["replays"] == 6 and s["fallbacks"] == {}, s


def test_pin_tiled_vae_decode():
    pytest.importorskip("diffusers")
    from graphdispatch.tiny_pipelines import _vae

    torch.manual_seed(0)
    vae = _vae().eval()  # sample_size 16: tiles of 8 latents, overlapping by a quarter
    vae.enable_tiling()
    latents = torch.randn(1, 4, 12, 12)  # tiles of four shapes (8 or 6 latents a side)
    with torch.no_grad():
        expected = vae.decode(latents).sample
        vae.decoder = compiled(vae.decoder)
        assert torch.equal(vae.decode(latents).sample, expected)
        warm = stats()
        assert torch.equal(vae.decode(latents).sample, expected)
    s = stats()
    assert s["captures"] == warm["captures"] and s["replays"] == warm["replays"] + 4, s
    assert s["fallbacks"] == {}, s


# ---- C52: the extra capture HiDream makes on its second call ---------------------------------


def expert(x, w):
    return torch.nn.functional.silu(x @ w)


@pytest.mark.parametrize("dynamic", [None, True], ids=["automatic", "dynamic"])
def test_c52_second_call_capture_comes_from_dynamos_automatic_dynamic_shapes(dynamic):
    # Token counts per expert as HiDream's routing makes them: a new size on most steps. The
    # first size is compiled static; once the frame is recompiled dynamic, Dynamo tries that
    # graph first, so the first size is captured again by it on the second run, once.
    G = torch.compile(
        expert,
        backend="graphdispatch",
        dynamic=dynamic,
        options={"graph_only": True, "device_graph": "emulated"},
    )
    w = torch.randn(8, 8)
    runs = []
    for _ in range(3):
        for tokens in (5, 7, 9):
            x = torch.randn(tokens, 8)
            assert torch.equal(G(x, w), expert(x, w))
        runs.append(stats()["captures"])
    assert stats()["fallbacks"] == {}
    second_run_captures = 1 if dynamic is None else 0
    assert runs[1] - runs[0] == second_run_captures and runs[2] == runs[1], runs
