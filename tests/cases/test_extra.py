"""Three more cases of the same kinds, on inputs the list does not use: a diffusers UNet in
bfloat16 (held outputs), module buffers updated in place in float16 (mutations applied once),
and channels-last / expanded float16 inputs (layout)."""

import copy

import pytest
import torch
from cases_helpers import compiled, runner, stats


def test_extra_diffusers_unet_bfloat16_two_held_results():
    from diffusers import UNet2DModel

    torch.manual_seed(0)
    unet = (
        UNet2DModel(
            sample_size=8,
            in_channels=3,
            out_channels=3,
            layers_per_block=1,
            block_out_channels=(16, 32),
            norm_num_groups=8,
            down_block_types=("DownBlock2D", "AttnDownBlock2D"),
            up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        )
        .to(torch.bfloat16)
        .eval()
    )
    G = compiled(lambda sample, t: unet(sample, t).sample)
    s1, s2 = (torch.randn(2, 3, 8, 8, dtype=torch.bfloat16) for _ in range(2))
    t1, t2 = torch.tensor([10, 10]), torch.tensor([500, 500])
    with torch.no_grad():
        a = G(s1, t1)
        b = G(s2, t2)
        G(torch.randn_like(s1), t1)  # a third replay over the same static outputs
        expected_a, expected_b = unet(s1, t1).sample, unet(s2, t2).sample
    assert a.dtype == torch.bfloat16
    torch.testing.assert_close(torch.cat([b, a]), torch.cat([expected_b, expected_a]))
    assert stats()["captures"] == 1 and stats()["replays"] == 3


class RunningStats(torch.nn.Module):
    """Buffers written in place every call: batch-norm statistics and a float16 EMA."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.BatchNorm2d(4)
        self.register_buffer("ema", torch.zeros(4, 6, 6, dtype=torch.float16))
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        self.ema.mul_(0.5).add_(x.mean(0).half())
        self.calls.add_(1)
        return self.norm(x) * self.ema.float()


@pytest.mark.parametrize("lazy_capture", [False, True], ids=["capture_at_compile", "lazy"])
def test_extra_module_buffers_updated_once_per_call(lazy_capture):
    torch.manual_seed(0)
    model = RunningStats().train()
    eager = copy.deepcopy(model)
    G = compiled(model, lazy_capture=lazy_capture)
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(3, 4, 6, 6)
            torch.testing.assert_close(G(x), eager(x))
    assert int(model.calls) == 3
    assert int(model.norm.num_batches_tracked) == 3
    for name, buffer in eager.named_buffers():
        torch.testing.assert_close(dict(model.named_buffers())[name], buffer)
    assert stats()["captures"] == 1


def test_extra_channels_last_and_expanded_float16_inputs():
    conv = torch.nn.Conv2d(8, 8, 3, padding=1).half()
    w, b = conv.weight, conv.bias

    def fn(x, w, b):
        return (torch.nn.functional.conv2d(x, w, b, padding=1) * 2,)

    # The weights are static inputs, as Dynamo passes them: the CPU graph reads no tensor the
    # entry does not vouch for (case C54).
    r = runner(fn, [False, True, True])
    with torch.no_grad():
        for _ in range(2):
            for x in (
                torch.randn(2, 8, 5, 5, dtype=torch.float16).to(memory_format=torch.channels_last),
                torch.randn(2, 8, 5, 5, dtype=torch.float16),
            ):
                got = r(x, w, b)[0]
                torch.testing.assert_close(got, fn(x, w, b)[0])
        assert r.num_entries == 2  # one graph per layout
        # An expanded input is copied through its unexpanded part (case C21): a third graph.
        for _ in range(2):
            expanded = torch.randn(1, 8, 5, 5, dtype=torch.float16).expand(2, 8, 5, 5)
            torch.testing.assert_close(r(expanded, w, b)[0], fn(expanded, w, b)[0])
        assert r.num_entries == 3
    assert stats()["fallbacks"] == {}
