"""Fourth-round cases (C54–C75): what the CPU graph may read, repoint, keep as a constant or
replay through ``out=``, and what it refuses at capture. Each test compares with eager on new
inputs every call and counts replays; on the emulated graph (which re-runs the FX graph) the
same tests hold eager's values, so both graph kinds run them (tests/cases/conftest.py)."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from cases_helpers import GRAPH_ONLY, GRAPH_WITH_COMPILE, compiled, fallbacks, runner, stats


def replays_every_call(calls: int) -> None:
    assert stats()["captures"] == 1, stats()
    assert stats()["replays"] == calls, stats()


def replays_like_eager(fn, make_inputs, calls: int = 3) -> None:
    """``fn`` compiled, called on new inputs ``calls`` times: eager's bytes, one capture, a
    replay each call."""
    G = compiled(fn)
    for _ in range(calls):
        args = make_inputs()
        torch.testing.assert_close(G(*args), fn(*args), rtol=0, atol=0)
    replays_every_call(calls)


# C54: autocast caches the bf16 cast of every grad-requiring weight until its outermost region
# exits; a capture must cast for itself, not read (or fill) that cache.
@pytest.mark.parametrize("warmup_iters", [0, 1])
@pytest.mark.parametrize("one_region", [True, False], ids=["one_region", "region_per_call"])
def test_c54_autocast_bfloat16_with_grad_requiring_weights(warmup_iters, one_region):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    assert all(p.requires_grad for p in model.parameters())
    G = compiled(model, warmup_iters=warmup_iters)
    xs = [torch.randn(3, 8) for _ in range(4)]

    def run(fn):
        if one_region:
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
                return [fn(x) for x in xs]
        out = []
        for x in xs:
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
                out.append(fn(x))
        return out

    got, expected = run(G), run(model)
    for g, e in zip(got, expected):
        assert g.dtype == torch.bfloat16
        torch.testing.assert_close(g, e, rtol=0, atol=0)
    replays_every_call(len(xs))


# C56: a literal written in place starts from its own bytes on every call.
def literal_scaled(x):
    t = torch.tensor([1.0, 2.0, 3.0])
    t.mul_(2)
    return x + t


def literal_accumulated(x):
    total = torch.tensor(0.0)
    total += x.sum()
    return x * total


def literal_half_and_index(x):
    h = torch.tensor([0.5, 0.25, 2.0], dtype=torch.float16)
    h.add_(1)
    i = torch.tensor([0, 1], dtype=torch.int64)
    i += 1  # eager indexes rows 1 and 2 every call; accumulated it walks out of range
    return x[i] * h.float()


@pytest.mark.parametrize("fn", [literal_scaled, literal_accumulated, literal_half_and_index])
def test_c56_literals_written_in_place_start_afresh(fn):
    replays_like_eager(fn, lambda: (torch.randn(3, 3),), calls=4)


# C57: max_pool1d fills an `empty` result outside the dispatcher: never the capture's values.
def test_c57_results_filled_outside_the_dispatcher_are_not_frozen():
    G = compiled(lambda x: F.max_pool1d(x, 2) + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            x = torch.randn(2, 3, 8)
            torch.testing.assert_close(G(x), F.max_pool1d(x, 2) + 1, rtol=0, atol=0)
    if GRAPH_ONLY["device_graph"] == "cpu":
        assert stats()["captures"] == 0 and fallbacks("capture_failed") == 3


def test_c57_refusal_names_the_op():
    def fn(x):
        return (F.max_pool1d(x, 2),)

    r = runner(fn, [False], kind="cpu")
    x = torch.randn(2, 3, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.testing.assert_close(r(x)[0], fn(x)[0])
    reason, detail = r.entry_reason(x)
    assert reason == "capture_failed"
    # max_pool1d is a composite: the recorder sees only its `empty`, not the loop filling it.
    assert "aten::empty" in detail and "outside the dispatcher" in detail, detail


# C58: an out= overload is used only where it computes what the functional op does.
@pytest.mark.parametrize("weighted", [False, True])
def test_c58_binary_cross_entropy_is_not_its_out_kernel(weighted):
    def fn(p, t, w):
        return F.binary_cross_entropy(p, t, weight=w if weighted else None)

    replays_like_eager(
        fn, lambda: (torch.rand(4, 5) * 0.9 + 0.05, torch.rand(4, 5), torch.rand(4, 5))
    )


# C59: ops that exist for their effect (an error check, an assertion) run on every replay.
def test_c59_singular_inverse_raises_on_replay_as_in_eager():
    G = compiled(lambda a: torch.linalg.inv(a) * 2)
    a = torch.randn(3, 3) + 3 * torch.eye(3)
    torch.testing.assert_close(G(a), torch.linalg.inv(a) * 2)
    torch.testing.assert_close(G(a.T.contiguous()), torch.linalg.inv(a.T) * 2)
    with pytest.raises(torch.linalg.LinAlgError):
        torch.linalg.inv(torch.zeros(3, 3))
    with pytest.raises(torch.linalg.LinAlgError):
        G(torch.zeros(3, 3))
    assert stats()["captures"] == 1


def test_c59_assert_async_keeps_asserting():
    def fn(x):
        torch._assert_async((x > 0).all())
        return (x.log(),)

    r = runner(fn, [False])
    x = torch.rand(4) + 0.5
    torch.testing.assert_close(r(x)[0], x.log())
    torch.testing.assert_close(r(x + 1)[0], (x + 1).log())
    with pytest.raises(RuntimeError):
        r(x - 2)
    assert stats()["captures"] == 1


@torch.library.custom_op("graphdispatch_cases::broadcast_row", mutates_args=())
def broadcast_row(x: torch.Tensor) -> torch.Tensor:
    return x.sum(0, keepdim=True).expand(x.shape[0], -1)


@broadcast_row.register_fake
def _(x):
    return x.new_empty(1, x.shape[1]).expand(x.shape[0], -1)


# C62: a custom op's expanded (stride-0) result replays: only the part a zero stride does not
# repeat is copied.
def test_c62_expanded_result_of_a_custom_op():
    def fn(x):
        return torch.ops.graphdispatch_cases.broadcast_row(x * 2) + x

    replays_like_eager(fn, lambda: (torch.randn(4, 5),))


@torch.library.custom_op("graphdispatch_cases::noisy", mutates_args=())
def noisy(x: torch.Tensor) -> torch.Tensor:
    return x + torch.randn_like(x)


@noisy.register_fake
def _(x):
    return torch.empty_like(x)


# C63: a custom op's kernel may draw random numbers although no tag says so: a capture at call
# time (here lazily, on every call's new shape) leaves the generator where eager leaves it.
@pytest.mark.parametrize("warmup_iters", [0, 2])
def test_c63_random_custom_op_keeps_eager_numbers(warmup_iters):
    def fn(x):
        return torch.ops.graphdispatch_cases.noisy(x) * 2

    G = torch.compile(
        fn,
        backend="graphdispatch",
        dynamic=False,  # one graph per size, each captured at its first call
        options={**GRAPH_ONLY, "lazy_capture": True, "warmup_iters": warmup_iters},
    )
    sizes = (3, 5, 3, 5)
    torch.manual_seed(0)
    expected = [fn(torch.ones(n)) for n in sizes] + [torch.randn(2)]
    torch.manual_seed(0)
    got = [G(torch.ones(n)) for n in sizes] + [torch.randn(2)]
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e, rtol=0, atol=0)
    assert stats()["captures"] == 2 and stats()["replays"] == len(sizes), stats()


SCALE = [2.0]


def _scaled(x: torch.Tensor) -> torch.Tensor:
    return x * SCALE[0]


# C64: a custom op registered as CompositeImplicitAutograd decomposes before the CPU graph's
# recorder sees it, so the Python state it reads is the capture's, as with torch.compile's own
# AOT tracing (backend="aot_eager", the oracle) and any device graph. The emulated graph reruns
# the FX graph, so it reads the state afresh, as eager does.
@pytest.fixture(scope="module")
def composite_scaled():
    lib = torch.library.Library("graphdispatch_c64", "DEF")
    lib.define("scaled(Tensor x) -> Tensor")
    lib.impl("scaled", _scaled, "CompositeImplicitAutograd")
    yield torch.ops.graphdispatch_c64.scaled
    lib._destroy()


def test_c64_composite_custom_op_reads_python_state_at_capture(composite_scaled):
    def fn(x):
        return composite_scaled(x) + 1

    G = compiled(fn)
    on_cpu_graph = GRAPH_ONLY["device_graph"] == "cpu"
    oracle = torch.compile(fn, backend="aot_eager") if on_cpu_graph else fn
    try:
        for scale in (2.0, 3.0, 4.0):
            SCALE[0] = scale
            x = torch.randn(4)
            torch.testing.assert_close(G(x), oracle(x), rtol=0, atol=0)
    finally:
        SCALE[0] = 2.0
    replays_every_call(3)


# C65: with safe_output_mode=False an output that is a graph constant is put back every call,
# so a caller's in-place write does not persist into the next call.
def test_c65_unsafe_constant_output_is_put_back():
    def fn(x):
        return x * 2, torch.tensor([1.0, 2.0])

    G = compiled(fn, safe_output_mode=False)
    for _ in range(3):
        x = torch.randn(2)
        doubled, literal = G(x)
        torch.testing.assert_close(doubled, x * 2)
        torch.testing.assert_close(literal, torch.tensor([1.0, 2.0]), rtol=0, atol=0)
        literal.add_(100)  # the caller owns what it was handed until the next call
    replays_every_call(3)


# C69: integer advanced indexing has the indices' shape and replays.
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize(
    "index",
    [
        lambda x, i, j: x[i],
        lambda x, i, j: x[:, i],
        lambda x, i, j: x[i, j],
        lambda x, i, j: x[i[:, None], j],
    ],
    ids=["rows", "columns", "pairs", "grid"],
)
def test_c69_integer_advanced_indexing_replays(index, dtype):
    def fn(x, i, j):
        return index(x, i, j) * 2

    def inputs():
        indices = (torch.randint(0, 5, (3,), dtype=dtype) for _ in range(2))
        return (torch.randn(5, 6), *indices)

    replays_like_eager(fn, inputs)


def test_c69_boolean_indexing_is_still_refused():
    def fn(x, m):
        return (x[m] * 2,)

    r = runner(fn, [False, False], kind="cpu")
    x, m = torch.randn(6), torch.tensor([True, False] * 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.testing.assert_close(r(x, m)[0], fn(x, m)[0])
    assert r.entry_reason(x, m)[0] == "capture_failed"


# C66: a process-wide flag that picks a composite's kernel is part of the cache key.
def test_c66_sdpa_backend_chosen_inside_sdpa_kernel():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v)

    G = compiled(fn)
    q, k, v = (torch.randn(1, 2, 16, 8) for _ in range(3))
    torch.testing.assert_close(G(q, k, v), fn(q, k, v), rtol=0, atol=0)
    with sdpa_kernel(SDPBackend.MATH):
        for _ in range(2):
            q, k, v = (torch.randn(1, 2, 16, 8) for _ in range(3))
            torch.testing.assert_close(G(q, k, v), fn(q, k, v), rtol=0, atol=0)
    q, k, v = (torch.randn(1, 2, 16, 8) for _ in range(3))
    torch.testing.assert_close(G(q, k, v), fn(q, k, v), rtol=0, atol=0)
    assert stats()["captures"] == 2 and stats()["replays"] == 4


class Ema(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("ema", torch.zeros(4))

    def forward(self, x):
        self.ema.mul_(0.5).add_(x.mean(0))
        return x * self.ema


# C61: a replay that writes a buffer counts the write, as eager's in-place op does.
def test_c61_replays_bump_the_version_of_what_they_write():
    torch.manual_seed(0)
    model, reference = Ema(), Ema()
    G = compiled(model)
    for _ in range(3):
        x = torch.randn(2, 4)
        before = model.ema._version
        with torch.no_grad():
            torch.testing.assert_close(G(x), reference(x), rtol=0, atol=0)
        assert model.ema._version > before
    w = torch.randn(4, requires_grad=True)
    saved = (w * model.ema).sum()  # autograd saves ema
    with torch.no_grad():
        G(torch.randn(2, 4))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        saved.backward()
    replays_every_call(4)


@torch.library.custom_op("graphdispatch_cases::halves", mutates_args=())
def halves(x: torch.Tensor) -> list[torch.Tensor]:
    return [t.clone() for t in x.chunk(2)]


@halves.register_fake
def _(x):
    return [t.clone() for t in x.chunk(2)]


# C72: ops returning lists of new tensors replay.
@pytest.mark.parametrize(
    "fn",
    [
        lambda x: torch.split_with_sizes_copy(x, [1, 3]),
        lambda x: torch.unbind_copy(x * 2),
        lambda x: torch._foreach_add([x, x * 2], 1.0),
        lambda x: torch.ops.graphdispatch_cases.halves(x + 1),
    ],
    ids=["split_with_sizes_copy", "unbind_copy", "foreach_add", "custom_op"],
)
def test_c72_lists_of_new_tensors_replay(fn):
    G = compiled(lambda x: [t * 3 for t in fn(x)])
    for _ in range(3):
        x = torch.randn(4, 3)
        for got, expected in zip(G(x), [t * 3 for t in fn(x)], strict=True):
            torch.testing.assert_close(got, expected, rtol=0, atol=0)
    replays_every_call(3)


ROPE_TABLE = torch.arange(8.0)
SAVED: list[torch.Tensor] = []


@torch.library.custom_op("graphdispatch_cases::memoised_table", mutates_args=())
def memoised_table(x: torch.Tensor) -> torch.Tensor:
    return ROPE_TABLE  # what a RoPE cache hands out: a tensor it keeps


@memoised_table.register_fake
def _(x):
    return x.new_empty(8)


@torch.library.custom_op("graphdispatch_cases::saving_hook", mutates_args=())
def saving_hook(x: torch.Tensor) -> torch.Tensor:
    y = x * 2
    SAVED.append(y)  # an activation hook keeping its result
    return y


@saving_hook.register_fake
def _(x):
    return torch.empty_like(x)


# C55: storage that something else holds is never moved into the arena or overwritten.
@pytest.mark.parametrize(
    "fn,replays",
    [
        (lambda x: torch.ops.graphdispatch_cases.memoised_table(x) * x, True),
        (lambda x: torch.ops.graphdispatch_cases.saving_hook(x) + 1, True),
        (lambda x: (torch.ops.graphdispatch_cases.memoised_table(x), x + 1), False),
    ],
    ids=["table_read", "hook_result_read", "table_returned"],
)
def test_c55_storage_others_hold_is_left_alone(fn, replays):
    SAVED.clear()
    G = compiled(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(4):
            x = torch.randn(8)
            got, expected = G(x), fn(x)
            for g, e in zip(*(v if isinstance(v, tuple) else (v,) for v in (got, expected))):
                torch.testing.assert_close(g, e, rtol=0, atol=0)
    assert torch.equal(ROPE_TABLE, torch.arange(8.0))
    for kept in SAVED:
        assert kept.abs().max() < 100  # a hook's saved results stay its own values
    if replays or GRAPH_ONLY["device_graph"] == "emulated":
        replays_every_call(4)
    else:  # returned as it is held: refused at capture, with the op named
        assert stats()["captures"] == 0 and fallbacks("capture_failed") == 4


def cond_fn(x):
    return torch.cond(x.sum() > 0, lambda x: x * 2, lambda x: x - 1, (x,))


# C71: a higher-order op replays where it only runs tensor ops, else is refused by name.
def test_c71_cond_is_refused_by_name_and_right_on_both_branches():
    G = compiled(cond_fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sign in (1, -1, 1, -1):
            x = torch.rand(4) * sign
            torch.testing.assert_close(G(x), cond_fn(x), rtol=0, atol=0)
    if GRAPH_ONLY["device_graph"] == "cpu":
        assert stats()["captures"] == 0 and fallbacks("capture_failed") == 4
        r = runner(lambda x: (cond_fn(x),), [False])
        x = torch.rand(4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r(x)
        assert "higher_order.cond" in r.entry_reason(x)[1]


def test_c71_flex_attention_replays():
    from torch.nn.attention.flex_attention import flex_attention

    def score_mod(score, b, h, q, k):
        return score + (q - k).float() * 0.1

    def fn(q, k, v):
        return flex_attention(q, k, v, score_mod=score_mod)

    G = compiled(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # flex_attention's own "not compiled" notice
        for _ in range(3):
            q, k, v = (torch.randn(1, 2, 16, 8) for _ in range(3))
            torch.testing.assert_close(G(q, k, v), fn(q, k, v), rtol=0, atol=0)
    replays_every_call(3)


RUNS = {"n": 0}


@torch.library.custom_op("graphdispatch_cases::counted", mutates_args=())
def counted(x: torch.Tensor) -> torch.Tensor:
    RUNS["n"] += 1
    return x + 1


@counted.register_fake
def _(x):
    return torch.empty_like(x)


# C68: how often a custom op's Python kernel runs: warmup_iters + 2 times on the capturing call
# (warmup, the capture's run, the call's own replay), then once per call (docs/usage.md).
@pytest.mark.parametrize("warmup_iters", [0, 1, 2])
def test_c68_custom_op_runs_warmup_plus_two_then_once_per_call(warmup_iters):
    RUNS["n"] = 0
    G = compiled(lambda x: torch.ops.graphdispatch_cases.counted(x) * 2, warmup_iters=warmup_iters)
    x = torch.randn(3)
    torch.testing.assert_close(G(x), (x + 1) * 2)
    assert RUNS["n"] == warmup_iters + 2
    for _ in range(3):
        x = torch.randn(3)
        torch.testing.assert_close(G(x), (x + 1) * 2)
    assert RUNS["n"] == warmup_iters + 5
    replays_every_call(4)


def tiny_clip_text():
    from transformers import CLIPTextConfig, CLIPTextModel

    config = CLIPTextConfig(
        vocab_size=100,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=16,
    )
    return CLIPTextModel(config), lambda o: (o.last_hidden_state, o.pooler_output)


def tiny_t5_encoder():
    from transformers import T5Config, T5EncoderModel

    config = T5Config(vocab_size=100, d_model=32, d_ff=64, d_kv=8, num_layers=2, num_heads=4)
    return T5EncoderModel(config), lambda o: (o.last_hidden_state,)


# C69 in the field: CLIPTextModel's pooled output and T5 with an attention mask index by
# integer positions; they replay every call.
@pytest.mark.parametrize("make", [tiny_clip_text, tiny_t5_encoder], ids=["clip", "t5"])
def test_c69_text_encoders_with_an_attention_mask_replay(make):
    torch.manual_seed(0)
    model, outputs = make()
    model.eval()
    G = compiled(model)
    with torch.no_grad():
        for _ in range(3):
            ids = torch.randint(0, 100, (2, 8))
            mask = torch.ones(2, 8, dtype=torch.long)
            mask[1, 5:] = 0
            got = outputs(G(input_ids=ids, attention_mask=mask))
            expected = outputs(model(input_ids=ids, attention_mask=mask))
            for g, e in zip(got, expected, strict=True):
                torch.testing.assert_close(g, e, rtol=0, atol=0)
    replays_every_call(3)


# C70: a float Dynamo made dynamic (under dynamic=True every float, LayerNorm's eps included)
# reaches the graph as a 0-d tensor read by .item(). The runner gets the number and keys on it
# (Note [Numbers in the key]): each value captures once, and replays from then on.
def scaled_forms(x, scale):
    return x * scale + torch.full((4,), scale) + torch.tensor([scale, 2 * scale]).sum()


def test_c70_dynamic_numbers_capture_once_per_value():
    G = torch.compile(scaled_forms, backend="graphdispatch", dynamic=True, options=GRAPH_ONLY)
    for scale in (0.5, 1.5, 0.5, 1.5, 0.5):
        x = torch.randn(4)
        torch.testing.assert_close(G(x, scale), scaled_forms(x, scale), rtol=0, atol=0)
    assert stats()["captures"] == 2 and stats()["replays"] == 5, stats()
    assert not stats()["fallbacks"], stats()


def test_c70_number_changing_every_call_warns_once(caplog):
    G = torch.compile(scaled_forms, backend="graphdispatch", dynamic=True, options=GRAPH_ONLY)
    x = torch.randn(4)
    calls = 12
    for k in range(calls):
        torch.testing.assert_close(G(x, 0.25 * k), scaled_forms(x, 0.25 * k), rtol=0, atol=0)
    assert stats()["captures"] == calls and stats()["replays"] == calls, stats()
    warnings = [r.getMessage() for r in caplog.records if "differ only in" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert "(scale), 0 at the first capture and 1.75 now" in warnings[0], warnings[0]


def test_c70_tiny_flux_under_dynamic_true_captures_once_per_shape():
    from graphdispatch.tiny_pipelines import tiny_flux_transformer

    torch.manual_seed(0)
    model = tiny_flux_transformer().eval()
    G = torch.compile(model, backend="graphdispatch", dynamic=True, options=GRAPH_ONLY)

    def call(f, tokens):
        torch.manual_seed(tokens)
        return f(
            hidden_states=torch.randn(1, tokens, 16),
            encoder_hidden_states=torch.randn(1, 6, 32),
            pooled_projections=torch.randn(1, 16),
            timestep=torch.tensor([0.3]),
            guidance=torch.tensor([3.5]),
            img_ids=torch.randn(tokens, 3),
            txt_ids=torch.zeros(6, 3),
            return_dict=False,
        )[0]

    # Token counts other than the 16 channels: Dynamo would tie an equal size to them.
    token_counts = (24, 40, 24, 40, 24)
    with torch.no_grad():
        for tokens in token_counts:
            torch.testing.assert_close(call(G, tokens), call(model, tokens), rtol=0, atol=0)
    assert stats()["routes"] == {"graph_only": 1}, stats()
    assert stats()["captures"] == 2 and stats()["replays"] == len(token_counts), stats()


# Inductor specialises a plain number, so its compiled graph gets the tensor back; on the
# emulated graph only (tests/cases/conftest.py).
@pytest.mark.parametrize("options", [pytest.param(GRAPH_WITH_COMPILE, marks=pytest.mark.inductor)])
def test_c70_graph_with_compile_keys_its_numbers_too(options):
    def fn(x, scale):
        return F.layer_norm(x, (4,)) * scale

    G = torch.compile(fn, backend="graphdispatch", dynamic=True, options=options)
    for scale in (0.5, 1.5, 0.5):
        x = torch.randn(3, 4)
        torch.testing.assert_close(G(x, scale), fn(x, scale))  # Inductor fuses: not bit-exact
    assert stats()["routes"] == {"graph_with_compile": 1}, stats()
    assert stats()["captures"] == 2 and stats()["replays"] == 3, stats()


# C69 in the field: AuraFlow indexes its position embedding by patch position, CogView4 and
# Z-Image their RoPE tables; every graph of each captures once and replays every call.
def tiny_auraflow():
    from diffusers import AuraFlowTransformer2DModel

    model = AuraFlowTransformer2DModel(
        sample_size=8,
        in_channels=4,
        num_mmdit_layers=1,
        num_single_dit_layers=1,
        attention_head_dim=8,
        num_attention_heads=2,
        joint_attention_dim=16,
        caption_projection_dim=16,
        out_channels=4,
        pos_embed_max_size=64,
    )

    def inputs(g):
        return dict(
            hidden_states=torch.randn(1, 4, 8, 8, generator=g),
            encoder_hidden_states=torch.randn(1, 5, 16, generator=g),
            timestep=torch.rand(1, generator=g),
            return_dict=False,
        )

    return model, inputs


def tiny_cogview4():
    from diffusers import CogView4Transformer2DModel

    model = CogView4Transformer2DModel(
        in_channels=4,
        out_channels=4,
        num_layers=1,
        attention_head_dim=4,
        num_attention_heads=4,
        text_embed_dim=8,
        time_embed_dim=8,
        condition_dim=4,
        pos_embed_max_size=16,
        sample_size=8,
        rope_axes_dim=(2, 2),
    )

    def inputs(g):
        size = torch.tensor([[64.0, 64.0]])
        return dict(
            hidden_states=torch.randn(1, 4, 8, 8, generator=g),
            encoder_hidden_states=torch.randn(1, 6, 8, generator=g),
            timestep=torch.rand(1, generator=g) * 1000,
            original_size=size,
            target_size=size,
            crop_coords=torch.zeros(1, 2),
            return_dict=False,
        )

    return model, inputs


def tiny_z_image():
    from diffusers import ZImageTransformer2DModel

    model = ZImageTransformer2DModel(
        in_channels=4,
        dim=32,
        n_layers=1,
        n_refiner_layers=1,
        n_heads=2,
        n_kv_heads=2,
        cap_feat_dim=16,
        axes_dims=[8, 4, 4],
        axes_lens=[64, 32, 32],
    )

    def inputs(g):
        return dict(
            x=[torch.randn(4, 1, 8, 8, generator=g)],
            t=torch.rand(1, generator=g),
            cap_feats=[torch.randn(6, 16, generator=g)],
            return_dict=False,
        )

    return model, inputs


@pytest.mark.parametrize(
    "make", [tiny_auraflow, tiny_cogview4, tiny_z_image], ids=["auraflow", "cogview4", "z_image"]
)
def test_c69_families_indexing_by_position_replay_every_call(make):
    torch.manual_seed(0)
    model, inputs = make()
    model.eval()
    G = compiled(model)
    with torch.no_grad():
        for k in range(3):
            before = stats()
            got = G(**inputs(torch.Generator().manual_seed(k)))[0]
            expected = model(**inputs(torch.Generator().manual_seed(k)))[0]
            torch.testing.assert_close(got, expected, rtol=0, atol=0)
    s = stats()
    # Every call of every graph replayed (a miss captures, then replays), none since the
    # second call captured (Z-Image's graph breaks and one recompile make several graphs).
    assert s["replays"] == s["cache_hits"] + s["cache_misses"] and not s["fallbacks"], s
    assert s["captures"] == before["captures"] and s["replays"] > before["replays"], s


# C74: an output with the conjugate or negative bit (`x.conj()`, `torch._neg_view`, a complex
# `lu_solve` with adjoint=True) keeps its values: outputs rebuilt over other memory (from_blob,
# set_, a view of an input) carry the bits, and an op returning such a tensor is not replayed
# through its out= overload, which writes the values, not the bits.
def conj_of_input(x):
    return x.conj()


def conj_of_intermediate(x):
    return (x * 2).conj()


def input_and_its_conj(x):
    return x, x.conj()


def neg_view(x):
    return torch._neg_view(x)


def lu_solve_adjoint_right(x):
    lu, pivots = torch.linalg.lu_factor(x[:, :3] + 3 * torch.eye(3))
    return torch.linalg.lu_solve(lu, pivots, x[:, 1:].t(), adjoint=True, left=False)


@pytest.mark.parametrize("safe", [True, False], ids=["safe", "unsafe"])
@pytest.mark.parametrize(
    "fn",
    [conj_of_input, conj_of_intermediate, input_and_its_conj, neg_view, lu_solve_adjoint_right],
)
def test_c74_conj_and_neg_outputs_keep_their_values(fn, safe):
    G = compiled(fn, safe_output_mode=safe)
    for _ in range(3):
        x = torch.randn(3, 4, dtype=torch.complex64)
        got, expected = G(x.clone()), fn(x.clone())
        for g, e in zip(
            got if isinstance(got, tuple) else (got,),
            expected if isinstance(expected, tuple) else (expected,),
            strict=True,
        ):
            torch.testing.assert_close(
                g.resolve_conj().resolve_neg(), e.resolve_conj().resolve_neg(), rtol=0, atol=0
            )
    replays_every_call(3)


# C75: a real 0-d tensor read only by .item() (capture_scalar_outputs) stays a tensor: here it
# views the input the graph doubles first, so reading it before the call would be wrong. Only
# numbers Dynamo made into tensors are handed over as numbers (case C70).
def test_c75_a_0d_view_read_by_item_is_read_after_the_write():
    def fn(x, t):
        x.mul_(2)
        return x + t.item()

    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        G = compiled(fn)
        for _ in range(2):
            a = torch.randn(3)
            b = a.clone()
            torch.testing.assert_close(G(b, b[0]), fn(a, a[0]), rtol=0, atol=0)
            torch.testing.assert_close(b, a, rtol=0, atol=0)


@torch.library.custom_op("graphdispatch_cases::matmul_cast", mutates_args=())
def matmul_cast(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x @ w


@matmul_cast.register_fake
def _(x, w):
    return x.new_empty(x.shape[0], w.shape[1])


torch.library.register_autocast("graphdispatch_cases::matmul_cast", "cpu", torch.bfloat16)


def float_region_custom_op(x, w):
    with torch.autocast("cpu", enabled=False):
        return torch.ops.graphdispatch_cases.matmul_cast(x.float(), w.float()) * 1.0


def float_region_conv_tbc(x, w):
    with torch.autocast("cpu", enabled=False):
        return torch.conv_tbc(x.float(), w.float(), torch.zeros(w.shape[2])) * 1.0


# C76: a region that turns autocast off inside a call made under autocast. What a recorded op
# calls through the dispatcher (a custom op's kernel, conv_tbc's matmuls) ran with autocast off
# at capture, and must on every replay too, whatever the caller's autocast is.
@pytest.mark.parametrize(
    "fn, shapes",
    [
        (float_region_custom_op, [(4, 16), (16, 8)]),
        (float_region_conv_tbc, [(6, 2, 16), (3, 16, 8)]),
    ],
    ids=["custom_op", "conv_tbc"],
)
def test_c76_autocast_off_region_replays_in_float32(fn, shapes):
    G = compiled(fn)
    with torch.no_grad():
        for _ in range(3):
            args = [torch.randn(s) for s in shapes]
            with torch.autocast("cpu", dtype=torch.bfloat16):
                torch.testing.assert_close(G(*args), fn(*args), rtol=0, atol=0)
    replays_every_call(3)
