"""Chapter 13's language model reads a whole text with PyTorch's ``is_causal=True`` and no mask
(on a GPU the flash kernel needs exactly that), with the outputs of the explicit causal mask."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from transformer_course import attention
from transformer_course.attention import fast_attention, is_causal_mask
from transformer_course.lm import DecoderOnlyConfig, DecoderOnlyLM, causal_rows, mark_causal


@pytest.mark.parametrize("modern", [False, True], ids=["2017 block", "today's block"])
def test_a_whole_text_is_read_with_is_causal_and_no_mask(monkeypatch, modern: bool) -> None:
    torch.manual_seed(0)
    config = (DecoderOnlyConfig.modern if modern else DecoderOnlyConfig)(60, d_model=32, n_heads=4, n_kv_heads=2)
    model = DecoderOnlyLM(config).eval()
    tokens = torch.randint(3, 60, (2, 9))
    calls = []
    original = F.scaled_dot_product_attention  # attention.F is torch.nn.functional itself

    def recording(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, **kwargs):
        calls.append((attn_mask is None, is_causal))
        return original(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, **kwargs)

    monkeypatch.setattr(attention.F, "scaled_dot_product_attention", recording)
    with torch.no_grad():
        fused = model(tokens)  # (B, T, V)
    assert calls and all(call == (True, True) for call in calls)
    monkeypatch.undo()
    with torch.no_grad():  # the same blocks with the mask as numbers, unmarked
        x = model.positional(model.embed(tokens)) if not modern else model.embed(tokens)
        for layer in model.layers:
            x = layer(x, causal_rows(0, 9))
        explicit = model.output(model.norm(x))
    assert torch.allclose(fused, explicit, atol=1e-5)


def test_only_a_marked_square_mask_is_replaced() -> None:
    q, k, v = torch.randn(3, 1, 2, 5, 4).unbind(0)
    mask = causal_rows(0, 5)
    assert not is_causal_mask(mask) and is_causal_mask(mark_causal(mask)) and not is_causal_mask(mask.clone())
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_rows(0, 5))
    assert torch.allclose(fast_attention(q, k, v, mask), expected, atol=1e-6)
    rows = mark_causal(causal_rows(2, 3))  # (3, 5): the last rows of a longer text, not square
    assert torch.allclose(fast_attention(q[..., 2:, :], k, v, rows), expected[..., 2:, :], atol=1e-6)
