"""Adversarial tests of the CPU graph's shared workspace (Note [Shared workspace]): several
CPU-graph entries alive at once, their calls interleaved, outputs held across other entries'
replays, with eager PyTorch as the oracle on new random inputs every call and
``graphdispatch.stats()`` checked so no replay silently falls back."""

from __future__ import annotations

import threading

import pytest
import torch

import graphdispatch

CPU = {"graph_only": True, "device_graph": "cpu"}


def gd(fn, dynamic=None, **extra):
    return torch.compile(fn, backend="graphdispatch", dynamic=dynamic, options={**CPU, **extra})


def exact(got, expected):
    if isinstance(expected, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(expected)
        for g, e in zip(got, expected):
            exact(g, e)
        return
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


def clone(v):
    if isinstance(v, (tuple, list)):
        return type(v)(clone(x) for x in v)
    return v.clone()


def seeded_exact(compiled, fn, x, seed):
    """``compiled(x)`` against ``fn(x)`` from the same seed, bit for bit; returns the pair."""
    torch.manual_seed(seed)
    expected = fn(x)
    torch.manual_seed(seed)
    got = compiled(x)
    exact(got, expected)
    return got, expected


def seeded_beside_wide(f, sizes, rounds, seed, wide_rows=None):
    """``f``, which draws random numbers, against eager from the same seed on every call, each
    call followed by another graph's replay (``fn_wide`` on the same input, or on ``wide_rows``
    new rows); every output held and checked again at the end."""
    G = gd(f, dynamic=False)
    Gw = gd(fn_wide, dynamic=False)
    c = Counts()
    held = []
    with torch.no_grad():
        for k in range(rounds):
            for b in sizes:
                x = torch.randn(b, 8)
                held.append(seeded_exact(G, f, x, seed + k))
                z = x if wide_rows is None else torch.randn(wide_rows, 8)
                exact(Gw(z), fn_wide(z))
        for got, expected in held:
            exact(got, expected)
    wide_entries = len(sizes) if wide_rows is None else 1
    c.check(replays=2 * rounds * len(sizes), captures=len(sizes) + wide_entries)


class Counts:
    """stats() deltas: replays (every call of a graph is one, its capturing call included) and
    captures since the start, and no fallback of any reason."""

    def __init__(self):
        self.start = graphdispatch.stats()

    def check(self, replays, captures=None, at_least=False):
        """``at_least``: only where a thread replays for as long as the test needs it."""
        s = graphdispatch.stats()
        assert s["fallbacks"] == {}, s["fallbacks"]
        made = s["replays"] - self.start["replays"]
        assert made >= replays if at_least else made == replays, (made, replays, s)
        if captures is not None:
            assert s["captures"] - self.start["captures"] == captures, s
        assert s["workspace_bytes"] > 0, s
        return s


class Interleaver:
    """Calls (compiled, eager, make-input) triples in a fixed shuffled order, holds every output
    with eager's value, and checks all held outputs again at the end (no other entry's replay
    may change them)."""

    def __init__(self, seed=0):
        self.gen = torch.Generator().manual_seed(seed)
        self.held = []

    def call(self, compiled, eager, make):
        args = make()
        expected = eager(*[clone(a) for a in args])
        got = compiled(*args)
        exact(got, expected)
        self.held.append((got, clone(expected)))
        return got

    def run(self, jobs, rounds):
        for _ in range(rounds):
            order = torch.randperm(len(jobs), generator=self.gen).tolist()
            for k in order:
                self.call(*jobs[k])

    def check_held(self):
        for got, expected in self.held:
            exact(got, expected)


def interleave(jobs, seed, rounds=4):
    """Runs ``jobs`` (not yet captured) ``rounds`` times in a shuffled order, outputs held:
    each captures once, every call replays, none falls back. Returns the Interleaver."""
    c = Counts()
    with torch.no_grad():
        it = Interleaver(seed)
        it.run(jobs, rounds=rounds)
        it.check_held()
    c.check(replays=rounds * len(jobs), captures=len(jobs))
    return it


def mlp(width, hidden, seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(width, hidden),
        torch.nn.GELU(),
        torch.nn.Linear(hidden, hidden),
        torch.nn.SiLU(),
        torch.nn.Linear(hidden, width),
    ).eval()


def fn_wide(x):
    # An intermediate larger than any output: 64x the input, reduced away.
    h = x.repeat(64, 1).sin() * 3
    h = h.cos() + h
    return h.sum(0), (x * 2).exp()


# ---------------------------------------------------------------------------------------------
# Several entries alive at once


@pytest.mark.parametrize("safe", [True, False], ids=["safe", "unsafe"])
def test_several_signatures_of_one_fn_interleaved_outputs_held(safe):
    G = gd(fn_wide, safe_output_mode=safe, dynamic=False)
    shapes = [(1, 8), (3, 8), (5, 8), (2, 16), (7, 4)]
    interleave([(G, fn_wide, (lambda s=s: (torch.randn(*s),))) for s in shapes], seed=0)


@pytest.mark.parametrize("safe", [True, False], ids=["safe", "unsafe"])
def test_several_models_interleaved_outputs_held(safe):
    models = [mlp(8, 64, 0), mlp(8, 16, 1), mlp(8, 256, 2)]

    def attn(q, k, v):
        a = torch.softmax(q @ k.transpose(-1, -2) / 4, dim=-1)
        return (a @ v).relu(), a.amax(-1)

    Gs = [gd(m, safe_output_mode=safe, dynamic=False) for m in models]
    Ga = gd(attn, safe_output_mode=safe, dynamic=False)
    jobs = []
    for G, m in zip(Gs, models):
        for b in (2, 5):
            jobs.append((G, m, (lambda b=b: (torch.randn(b, 8),))))
    for n in (4, 9):
        jobs.append((Ga, attn, (lambda n=n: tuple(torch.randn(2, n, 16) for _ in range(3)))))
    interleave(jobs, seed=1)


class Block(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 4 * width)
        self.down = torch.nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


def test_regional_compilation_blocks_interleaved():
    torch.manual_seed(3)
    blocks = torch.nn.ModuleList([Block(16) for _ in range(4)]).eval()
    eager = [clone_module(b) for b in blocks]
    for b in blocks:
        b.compile(backend="graphdispatch", options={**CPU, "safe_output_mode": False})
    c = Counts()
    with torch.no_grad():
        held = []
        for _ in range(6):
            for n in (3, 6):
                x = torch.randn(2, n, 16)
                y, e = x, x.clone()
                for b, eb in zip(blocks, eager):
                    y = b(y)
                    e = eb(e)
                    held.append((y, e.clone()))
                exact(y, e)
        for got, expected in held:
            exact(got, expected)
    # Every call of every block replays. Per block three captures: the first token count on
    # the static graph, then both on the graph Dynamo recompiles with the count dynamic.
    c.check(replays=6 * 2 * 4, captures=3 * 4)


def clone_module(m):
    import copy

    return copy.deepcopy(m)


def test_growing_workspace_with_older_entries_still_replaying():
    # A small entry captured first sizes the workspace; larger ones grow it while the small
    # entries keep replaying (their block is replaced at their next replay).
    G = gd(fn_wide, dynamic=False)
    c = Counts()
    with torch.no_grad():
        it = Interleaver(2)
        jobs = []
        for n in (1, 2, 4, 8, 16, 32):
            jobs.append((G, fn_wide, (lambda n=n: (torch.randn(n, 8),))))
            it.run(jobs, rounds=2)
        it.check_held()
    c.check(replays=2 * sum(range(1, 7)), captures=6)


# ---------------------------------------------------------------------------------------------
# Autocast


def test_autocast_bfloat16_several_models_interleaved():
    models = [mlp(16, 64, 4), mlp(16, 32, 5)]

    def gated(x, w):
        return torch.nn.functional.linear(x, w).sigmoid() * x.sum(-1, keepdim=True), x @ w.t()

    Gs = [gd(m, dynamic=False) for m in models]
    Gg = gd(gated, dynamic=False)
    w = torch.randn(16, 16)
    jobs = [(G, m, (lambda b=b: (torch.randn(b, 16),))) for G, m in zip(Gs, models) for b in (3, 7)]
    jobs += [(Gg, gated, (lambda b=b: (torch.randn(b, 16), w))) for b in (2, 5)]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        it = interleave(jobs, seed=3)
    assert all(got.dtype == torch.bfloat16 for got, _ in it.held if isinstance(got, torch.Tensor))


# ---------------------------------------------------------------------------------------------
# Custom ops


@torch.library.custom_op("ws_attack::scale_shift", mutates_args=())
def scale_shift(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x * w + 1


@scale_shift.register_fake
def _(x, w):
    return torch.empty_like(x)


KEPT_RESULTS: list = []


@torch.library.custom_op("ws_attack::keep_result", mutates_args=())
def keep_result(x: torch.Tensor) -> torch.Tensor:
    out = x.tanh() * 2
    KEPT_RESULTS.append(out)  # holds on to its result
    return out


@keep_result.register_fake
def _(x):
    return torch.empty_like(x)


@torch.library.custom_op("ws_attack::noisy", mutates_args=())
def noisy(x: torch.Tensor) -> torch.Tensor:
    return x + torch.rand_like(x)


@noisy.register_fake
def _(x):
    return torch.empty_like(x)


torch.library.define("ws_attack::composite", "(Tensor x, Tensor y) -> Tensor")


@torch.library.impl("ws_attack::composite", "CompositeImplicitAutograd")
def composite(x, y):
    return (x * y).sin() + torch.ones(1).add_(y.mean())


def f_custom(x, w):
    h = (x.cos() * 5).repeat(4, 1)
    a = scale_shift(h, w.repeat(4, 1))
    b = keep_result(a)
    c = torch.ops.ws_attack.composite(b, a)
    return c.sum(0), b * 3


EAGER_KEPT: list = []


def eager_custom(x, w):
    n = len(KEPT_RESULTS)
    out = f_custom(x, w)
    EAGER_KEPT[:] = KEPT_RESULTS[n:]
    del KEPT_RESULTS[n:]
    return out


def test_custom_ops_interleaved_with_other_entries():
    G = gd(f_custom, dynamic=False)
    Gw = gd(fn_wide, dynamic=False)
    jobs = [
        (G, eager_custom, (lambda b=b: (torch.randn(b, 8), torch.randn(b, 8)))) for b in (2, 5)
    ] + [(Gw, fn_wide, (lambda b=b: (torch.randn(b, 8),))) for b in (1, 9)]
    c = Counts()
    with torch.no_grad():
        it = Interleaver(4)
        for _ in range(4):
            for k in torch.randperm(len(jobs), generator=it.gen).tolist():
                it.call(*jobs[k])
                if k < 2:
                    # The op's kept result is the one of this call, whatever replays after it.
                    exact(KEPT_RESULTS[-1], EAGER_KEPT[-1])
                    it.held.append((KEPT_RESULTS[-1], EAGER_KEPT[-1].clone()))
        it.check_held()
    c.check(replays=4 * len(jobs), captures=len(jobs))


SEEN_INPUTS: list = []


@torch.library.custom_op("ws_attack::remember_input", mutates_args=())
def remember_input(x: torch.Tensor) -> torch.Tensor:
    SEEN_INPUTS.append(x)  # keeps its argument, an intermediate of the graph
    return x * 2


@remember_input.register_fake
def _(x):
    return torch.empty_like(x)


def test_custom_op_that_keeps_an_intermediate_argument():
    # The kernel keeps `h`, an intermediate: it must hold this call's value until the entry's
    # next call (as a kept input buffer does), not change when another entry replays, nor when
    # the entry's own outputs made after h's last use are written.
    def f(x):
        h = x.sin() + 1
        z = (remember_input(h) * 3).cos()
        return z.sum(0), z.exp()

    G = gd(f, dynamic=False)
    Gw = gd(fn_wide, dynamic=False)
    c = Counts()
    with torch.no_grad():
        for _ in range(4):
            x = torch.randn(3, 8)
            G(x)
            kept = SEEN_INPUTS[-1]
            expected = x.sin() + 1
            exact(kept, expected)
            Gw(torch.randn(40, 8))  # another entry's replay
            exact(kept, expected)
    c.check(replays=4 + 4, captures=2)


def test_custom_op_drawing_random_numbers_with_other_entries():
    def f(x):
        h = x.exp().repeat(3, 1)
        return noisy(h).sum(0) + noisy(x)

    seeded_beside_wide(f, sizes=(2, 4), rounds=6, seed=100)


# ---------------------------------------------------------------------------------------------
# Literals and tensors made in the graph, written in place


def f_literals(x):
    a = torch.ones(x.shape[-1]).add_(x.sum(0))
    b = x.new_zeros(x.shape).fill_(2.5).mul_(x)
    c = torch.tensor([1.0, 2.0, 3.0, 4.0]).repeat(x.shape[-1] // 4).mul_(x.mean())
    d = torch.zeros(5, x.shape[-1]).index_add_(0, torch.tensor([0, 2, 2]), x[:3])
    e = torch.full((x.shape[-1],), 7.0)
    e.addcmul_(x[0], x[1])
    f = torch.arange(x.shape[-1], dtype=torch.float32)
    f.mul_(x[0])
    g = torch.empty(x.shape).copy_(x).sub_(1)
    g[0].zero_()
    return a, b + 1, c, d, e, f, g


def test_literals_written_in_place_interleaved():
    G = gd(f_literals, dynamic=False)
    Gw = gd(fn_wide, dynamic=False)
    jobs = [(G, f_literals, (lambda b=b: (torch.randn(b, 8),))) for b in (3, 6)]
    jobs += [(Gw, fn_wide, (lambda b=b: (torch.randn(b, 8),))) for b in (2, 30)]
    interleave(jobs, seed=5)


def test_literal_returned_then_written_by_the_user():
    def f(x):
        return torch.tensor([1.0, 2.0, 3.0]), x.new_ones(3).mul_(x.sum())

    G = gd(f, safe_output_mode=False, dynamic=False)
    Gw = gd(fn_wide, dynamic=False)
    c = Counts()
    with torch.no_grad():
        for _ in range(5):
            x = torch.randn(4, 3)
            got = G(x)
            exact(got, f(x))
            got[0].add_(100)
            got[1].mul_(-1)
            z = torch.randn(20, 3)
            exact(Gw(z), fn_wide(z))
            del got
    c.check(replays=5 + 5, captures=2)


# ---------------------------------------------------------------------------------------------
# Weights changed between calls


def test_weights_changed_in_place_and_loaded_between_calls():
    m1, m2 = mlp(8, 32, 6), mlp(8, 128, 7)
    G1, G2 = gd(m1, dynamic=False), gd(m2, dynamic=False)
    c = Counts()
    held = []
    with torch.no_grad():
        for step in range(6):
            for G, m in ((G1, m1), (G2, m2)):
                for b in (2, 5):
                    x = torch.randn(b, 8)
                    got = G(x)
                    expected = m(x)
                    exact(got, expected)
                    held.append((got, expected))
            if step % 2 == 0:
                m1[0].weight.add_(1)
                m2[2].bias.mul_(-0.5)
            else:
                m1.load_state_dict({k: torch.randn_like(v) for k, v in m1.state_dict().items()})
        for got, expected in held:
            exact(got, expected)
    c.check(replays=6 * 2 * 2, captures=4)  # weights written in place: no recapture


# ---------------------------------------------------------------------------------------------
# Threads


def test_two_threads_replay_different_entries_concurrently():
    models = [mlp(16, 128, 8), mlp(16, 64, 9)]
    Gs = [gd(m, dynamic=False) for m in models]
    Gw = gd(fn_wide, dynamic=False)
    with torch.no_grad():
        for G, m in ((Gs[0], models[0]), (Gs[1], models[1]), (Gw, fn_wide)):
            for _ in range(2):  # captured here, so the threads only replay
                x = torch.randn(6 if G is Gw else 4, 16)
                exact(G(x), m(x))
    c = Counts()
    errors = []
    barrier = threading.Barrier(3)

    def work(G, eager, shape, seed):
        try:
            gen = torch.Generator().manual_seed(seed)
            held = []
            barrier.wait()
            with torch.no_grad():
                for _ in range(60):
                    x = torch.randn(*shape, generator=gen)
                    got = G(x)
                    expected = eager(x)
                    exact(got, expected)
                    held.append((got, expected))
                for got, expected in held:
                    exact(got, expected)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [
        threading.Thread(target=work, args=(Gs[0], models[0], (4, 16), 1)),
        threading.Thread(target=work, args=(Gs[1], models[1], (4, 16), 2)),
        threading.Thread(target=work, args=(Gw, fn_wide, (6, 16), 3)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    c.check(replays=3 * 60, captures=0)


# ---------------------------------------------------------------------------------------------
# Aliasing outputs


def f_views(x, w):
    h = (x @ w).relu()  # an intermediate whose views are outputs
    g = h.exp()
    return h[:, :2], h.t(), g.view(-1)[::3], x, x[0], x.view(-1)[1:4]


@pytest.mark.parametrize("safe", [True, False], ids=["safe", "unsafe"])
def test_outputs_views_of_intermediates_and_aliasing_inputs(safe):
    G = gd(f_views, safe_output_mode=safe, dynamic=False)
    Gw = gd(fn_wide, safe_output_mode=safe, dynamic=False)
    w = torch.randn(8, 8)
    jobs = [(G, f_views, (lambda b=b: (torch.randn(b, 8), w))) for b in (3, 6)]
    jobs += [(Gw, fn_wide, (lambda b=b: (torch.randn(b, 8),))) for b in (2, 50)]
    interleave(jobs, seed=6)


def test_in_place_on_an_input_with_other_entries():
    def f(x, y):
        t = x * 2
        x.add_(t.sin())
        return x.sum(0), y.mul_(3)

    G = gd(f, dynamic=False)
    Gw = gd(fn_wide, dynamic=False)
    c = Counts()
    with torch.no_grad():
        for _ in range(5):
            x, y = torch.randn(4, 8), torch.randn(8)
            ex, ey = x.clone(), y.clone()
            expected = f(ex, ey)
            got = G(x, y)
            exact(got, expected)
            exact((x, y), (ex, ey))
            exact(Gw(x), fn_wide(ex))
    c.check(replays=5 + 5, captures=2)


# ---------------------------------------------------------------------------------------------
# Replays that raise, entries dropped or evicted, random ops, nesting


def test_a_replay_that_raises_midway_leaves_other_entries_exact():
    def f(a, b):
        h = (a @ a.mT).exp()  # written to the workspace before the solve raises
        return torch.linalg.solve(b, h), h.sum()

    G = gd(f, dynamic=False)
    Gw = gd(fn_wide, dynamic=False)
    c = Counts()
    with torch.no_grad():
        for k in range(6):
            a = torch.randn(4, 4)
            b = torch.randn(4, 4) + 4 * torch.eye(4)
            if k % 2:
                b = torch.zeros(4, 4)  # singular: eager and the replay both raise
                with pytest.raises(torch.linalg.LinAlgError):
                    f(a, b)
                with pytest.raises(torch.linalg.LinAlgError):
                    G(a, b)
            else:
                exact(G(a, b), f(a, b))
            x = torch.randn(9, 8)
            exact(Gw(x), fn_wide(x))
    c.check(replays=3 + 6, captures=2)  # the three calls that raise replay nothing


def test_unsafe_outputs_of_a_dropped_model_stay_while_others_replay():
    big, small = mlp(8, 512, 10), mlp(8, 16, 11)
    Gb = gd(big, safe_output_mode=False, dynamic=False)
    Gs = gd(small, safe_output_mode=False, dynamic=False)
    held = []
    with torch.no_grad():
        for _ in range(3):
            for G, m in ((Gb, big), (Gs, small)):
                x = torch.randn(6, 8)
                got = G(x)
                held.append((got, m(x)))
        grown = graphdispatch.stats()["workspace_bytes"]
        del Gb, big
        torch._dynamo.reset()  # drops the big model's graph and its entries
        import gc

        gc.collect()
        for _ in range(3):
            x = torch.randn(6, 8)
            exact(Gs(x), small(x))
        Gs2 = gd(small, safe_output_mode=False, dynamic=False)
        for _ in range(4):
            x = torch.randn(6, 8)
            got = Gs2(x)
            exact(got, small(x))
            held.append((got, small(x)))
        for got, expected in held:
            exact(got, expected)
    assert graphdispatch.stats()["workspace_bytes"] <= grown


def test_entries_evicted_and_recaptured_while_outputs_held():
    G = gd(fn_wide, safe_output_mode=False, max_entries=2, dynamic=True)
    c = Counts()
    with torch.no_grad():
        it = Interleaver(7)
        jobs = [(G, fn_wide, (lambda n=n: (torch.randn(n, 8),))) for n in (2, 4, 16)]
        it.run(jobs, rounds=5)
        it.check_held()
    s = graphdispatch.stats()
    assert s["evictions"] - c.start["evictions"] > 0, s
    assert s["fallbacks"] == {}, s


def test_random_ops_in_graphs_interleaved_with_other_entries():
    def f(x):
        h = torch.nn.functional.dropout(x.repeat(3, 1), p=0.5, training=True)
        return h * torch.rand_like(h), torch.randn(x.shape[0], 4).add_(x[:, :4])

    seeded_beside_wide(f, sizes=(2, 5), rounds=5, seed=1000, wide_rows=30)


_SAME: list = []


@torch.library.custom_op("ws_attack::call_same", mutates_args=())
def call_same(x: torch.Tensor) -> torch.Tensor:
    # The same compiled function on another signature, nested in this replay.
    return _SAME[0](x.repeat(2, 1))[0].sum(0, keepdim=True).expand_as(x).clone()


@call_same.register_fake
def _(x):
    return torch.empty_like(x)


def test_nested_replay_of_another_entry_of_the_same_graph_and_a_thread():
    Gw = gd(fn_wide, dynamic=False)
    _SAME[:] = [Gw]

    def outer(x):
        h = x.sin().repeat(8, 1)
        return call_same(h) + h.cos()

    def eager_outer(x):
        h = x.sin().repeat(8, 1)
        inner = fn_wide(h.repeat(2, 1))[0].sum(0, keepdim=True).expand_as(h)
        return inner + h.cos()

    Go = gd(outer, dynamic=False)
    errors = []

    def side():
        try:
            with torch.no_grad():
                for _ in range(40):
                    z = torch.randn(3, 8)
                    exact(Gw(z), fn_wide(z))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    c = Counts()
    with torch.no_grad():
        z = torch.randn(3, 8)
        exact(Gw(z), fn_wide(z))
        t = threading.Thread(target=side)
        t.start()
        for _ in range(20):
            x = torch.randn(2, 8)
            exact(Go(x), eager_outer(x))
        t.join(timeout=120)
        assert not t.is_alive(), "hung"
    assert not errors, errors[0]
    # Gw: 1 + the side thread's 40 + one nested in each of Go's 20 replays.
    c.check(replays=20 + 1 + 40 + 20, captures=3)


@torch.library.custom_op("ws_attack::bump", mutates_args=("x",))
def bump(x: torch.Tensor, by: torch.Tensor) -> None:
    x.add_(by.tanh())


def f_mutating(x, y):
    h = x.exp().repeat(2, 1)  # an intermediate the custom op writes in place
    bump(h, h.flip(0))
    bump(y, x.sum(0))  # and an input
    return h.sum(0), y * 1


def f_expanded(x):
    h = (x * 3).sin()
    return (
        h.sum(0).expand(3, -1),
        h.diagonal(),
        h.unsqueeze(0)[:, ::2],
        torch.ones(x.shape[-1]).expand(2, -1),
        torch.tensor([5.0, 6.0]).add(x[0, :2]).expand(3, 2),
        h.t().contiguous().view(-1)[::5],
    )


@pytest.mark.parametrize("safe", [True, False], ids=["safe", "unsafe"])
def test_mutating_custom_op_and_expanded_outputs_interleaved(safe):
    Gm = gd(f_mutating, safe_output_mode=safe, dynamic=False)
    Ge = gd(f_expanded, safe_output_mode=safe, dynamic=False)
    Gw = gd(fn_wide, safe_output_mode=safe, dynamic=False)
    jobs = [(Gm, f_mutating, (lambda b=b: (torch.randn(b, 8), torch.randn(8)))) for b in (3, 5)]
    jobs += [(Ge, f_expanded, (lambda b=b: (torch.randn(b, 8),))) for b in (8, 11)]
    jobs += [(Gw, fn_wide, (lambda b=b: (torch.randn(b, 8),))) for b in (2, 40)]
    interleave(jobs, seed=8)


# Case C93: the view's autograd base, held only by the output views, is no other holder.
def test_a_view_of_a_literal_returned_replays():
    def f(x):
        return torch.tensor([5.0, 6.0]).expand(3, 2), x + 1

    G = gd(f, dynamic=False)
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(4, 8)
            exact(G(x), f(x))  # the values are eager's either way
    s = graphdispatch.stats()
    assert s["fallbacks"] == {} and s["replays"] >= 2, s


def test_captures_growing_the_workspace_while_another_thread_replays():
    m = mlp(16, 64, 14)
    Gm = gd(m, dynamic=False)
    Gw = gd(fn_wide, dynamic=False)
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(4, 16)
            exact(Gm(x), m(x))
    errors, done = [], threading.Event()

    def replayer():
        try:
            gen = torch.Generator().manual_seed(5)
            held = []
            with torch.no_grad():
                while not done.is_set() or len(held) < 20:
                    x = torch.randn(4, 16, generator=gen)
                    got = Gm(x)
                    exact(got, m(x))
                    held.append((got, m(x)))
            for got, expected in held:
                exact(got, expected)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    c = Counts()
    t = threading.Thread(target=replayer)
    t.start()
    held = []
    with torch.no_grad():
        for n in (1, 3, 9, 27, 81):  # each capture needs a larger workspace than the last
            for _ in range(2):
                x = torch.randn(n, 16)
                got = Gw(x)
                exact(got, fn_wide(x))
                held.append((got, fn_wide(x)))
    done.set()
    t.join(timeout=120)
    assert not t.is_alive(), "hung"
    assert not errors, errors[0]
    for got, expected in held:
        exact(got, expected)
    # The replayer runs until the captures are done: at least its 20 calls and Gw's 10.
    c.check(replays=20 + 10, captures=5, at_least=True)


MEMO: dict = {}


@torch.library.custom_op("ws_attack::memo_table", mutates_args=())
def memo_table(x: torch.Tensor) -> torch.Tensor:
    out = x.cos() + 2
    MEMO["last"] = out  # a memoised result: the graph works on its own copy of it
    return out


@memo_table.register_fake
def _(x):
    return torch.empty_like(x)


def test_custom_op_keeping_its_argument_that_is_another_ops_kept_result():
    def f(x):
        t = memo_table(x.sin())
        return remember_input(t).sum(0)

    G = gd(f, dynamic=False)
    Gw = gd(fn_wide, dynamic=False)
    c = Counts()
    with torch.no_grad():
        for _ in range(4):
            x = torch.randn(3, 8)
            expected_out = f(x)
            exact(G(x), expected_out)
            kept, expected = SEEN_INPUTS[-1], x.sin().cos() + 2
            exact(kept, expected)
            z = torch.randn(40, 8)
            exact(Gw(z), fn_wide(z))  # another entry's replay
            exact(kept, expected)
    c.check(replays=4 + 4, captures=2)
