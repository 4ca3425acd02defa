"""C1, C2: outputs the caller still holds when later calls replay the same graph."""

import pytest
import torch
from cases_helpers import GRAPH_ONLY, ROUTES, compiled, stats


def matmul(x):
    return x @ x


@pytest.mark.parametrize("options", ROUTES)
def test_c1_later_call_never_changes_a_held_output(options):
    G = compiled(matmul, options)
    x1, x2 = torch.randn(10, 10), torch.randn(10, 10)
    y1 = G(x1)
    view, detached = y1[2:5], y1.detach()
    y2 = G(x2)
    G(torch.randn(10, 10))  # one more replay over the same static outputs
    expected = matmul(x1)
    torch.testing.assert_close(y1, expected)
    torch.testing.assert_close(view, expected[2:5])
    torch.testing.assert_close(detached, expected)
    torch.testing.assert_close(y2, matmul(x2))
    assert y1.untyped_storage().data_ptr() != y2.untyped_storage().data_ptr()
    assert stats()["captures"] == 1 and stats()["replays"] == 3


def test_c1_unsafe_outputs_keep_the_documented_contract():
    # safe_output_mode=False: the caller gets the static outputs; one still held when the next
    # replay would overwrite them is copied away first (C46), one dropped costs nothing.
    G = compiled(matmul, GRAPH_ONLY, safe_output_mode=False)
    x1, x2 = torch.randn(10, 10), torch.randn(10, 10)
    y1 = G(x1)
    static = y1.data_ptr()
    y2 = G(x2)
    assert torch.equal(y1, matmul(x1)) and torch.equal(y2, matmul(x2))
    assert y2.data_ptr() == static and y1.data_ptr() != static
    assert stats()["held_outputs_copied"] == 1
    del y1, y2
    y3 = G(x1)
    assert y3.data_ptr() == static and torch.equal(y3, matmul(x1))
    assert stats()["held_outputs_copied"] == 1


class TextEncoderLike(torch.nn.Module):
    def __init__(self, dim=64, vocab=100):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.layer = torch.nn.TransformerEncoderLayer(
            dim, nhead=4, dim_feedforward=128, batch_first=True, dropout=0.0
        )
        self.norm = torch.nn.LayerNorm(dim)

    def forward(self, ids):
        return self.norm(self.layer(self.embed(ids)))


def test_c2_prompt_and_negative_prompt_both_used_later():
    torch.manual_seed(0)
    model = TextEncoderLike().eval()
    G = compiled(model)
    prompt, negative = torch.randint(0, 100, (2, 77)), torch.randint(0, 100, (2, 77))
    with torch.no_grad():
        a = G(prompt)
        b = G(negative)
        got = torch.cat([b, a])
        expected = torch.cat([model(negative), model(prompt)])
    assert got.shape == (4, 77, 64)
    torch.testing.assert_close(got, expected)
    assert stats()["captures"] == 1 and stats()["replays"] == 2
