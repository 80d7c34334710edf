"""Training speed of chapter 13's modern language model against a compact Llama-style reference.

    python -m benchmarks.lm_training                  # D=256, H=8, Hkv=2, 4 layers, batch 16 × 128 tokens
    python -m benchmarks.lm_training --rounds 3 --no-append

The reference (``LlamaStyleLM`` below) is the model as the short single-file implementations write
it: one fused Q/K/V product, rotary pairs (2i, 2i+1) as complex numbers, the grouped keys and values
repeated to every query head, ``F.scaled_dot_product_attention(is_causal=True)``, SwiGLU, RMSNorm
written out. It gets our model's weights (``same_weights``), so both compute the same function
(tests/test_benchmarks.py), and both train with the same AdamW and loss.

Three variants: ours as it trains (``DecoderOnlyLM.forward`` marks its causal mask, so PyTorch gets
``is_causal=True`` and no mask), ours with the mask handed over as a tensor (the mark switched off),
and the reference. One thread, CPU time of this process (``time.process_time``: the load of other
programs does not count), a step = forward + backward + AdamW; the variants run interleaved, round
after round, each first in turn, and medians are compared. Appends a table to ``benchmarks/results.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer_course import lm
from transformer_course.lm import DecoderOnlyConfig, DecoderOnlyLM

RESULTS = Path(__file__).resolve().parent / "results.md"


def make_config(d_model: int = 256, n_heads: int = 8, n_kv_heads: int = 2, n_layers: int = 4) -> DecoderOnlyConfig:
    """Llama's choices: no biases, the output tied to the embedding (as small Llamas do)."""
    return DecoderOnlyConfig.modern(1000, d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv_heads,
                                    n_layers=n_layers, max_len=512, bias=False)  # fmt: skip


class RMSNormRef(nn.Module):
    def __init__(self, d: int, eps: float) -> None:
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(d))

    def forward(self, x: Tensor) -> Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate(x: Tensor, turns: Tensor) -> Tensor:
    """Pairs (2i, 2i+1) of x as complex numbers, times the unit complex numbers ``turns`` (T, d/2)."""
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))  # (B, H, T, d/2)
    return torch.view_as_real(pairs * turns).flatten(-2).type_as(x)  # (B, H, T, d)


class BlockRef(nn.Module):
    def __init__(self, c: DecoderOnlyConfig) -> None:
        super().__init__()
        self.h, self.h_kv, self.d = c.n_heads, c.n_kv_heads or c.n_heads, c.d_model // c.n_heads
        self.norm1, self.norm2 = RMSNormRef(c.d_model, c.layer_norm_eps), RMSNormRef(c.d_model, c.layer_norm_eps)
        self.qkv = nn.Linear(c.d_model, (self.h + 2 * self.h_kv) * self.d, bias=False)
        self.out = nn.Linear(c.d_model, c.d_model, bias=False)
        self.gate_up = nn.Linear(c.d_model, 2 * c.d_ff, bias=False)
        self.down = nn.Linear(c.d_ff, c.d_model, bias=False)

    def forward(self, x: Tensor, turns: Tensor) -> Tensor:
        b, t, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).split([self.h * self.d, self.h_kv * self.d, self.h_kv * self.d], dim=-1)
        q = rotate(q.view(b, t, self.h, self.d).transpose(1, 2), turns)  # (B, H, T, d)
        k = rotate(k.view(b, t, self.h_kv, self.d).transpose(1, 2), turns)  # (B, Hkv, T, d)
        v = v.view(b, t, self.h_kv, self.d).transpose(1, 2)
        k, v = (z.repeat_interleave(self.h // self.h_kv, dim=1) for z in (k, v))  # (B, H, T, d)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, d)
        x = x + self.out(y.transpose(1, 2).reshape(b, t, -1))
        gate, up = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class LlamaStyleLM(nn.Module):
    def __init__(self, c: DecoderOnlyConfig) -> None:
        super().__init__()
        self.embed = nn.Embedding(c.vocab_size, c.d_model)
        self.scale = c.d_model**0.5 if c.scale_embedding else 1.0
        self.blocks = nn.ModuleList(BlockRef(c) for _ in range(c.n_layers))
        self.norm = RMSNormRef(c.d_model, c.layer_norm_eps)
        d = c.d_model // c.n_heads
        frequencies = c.rope_base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
        angles = torch.outer(torch.arange(c.max_len, dtype=torch.float64), frequencies)  # (max_len, d/2)
        self.register_buffer(
            "turns", torch.polar(torch.ones_like(angles), angles).to(torch.complex64), persistent=False
        )

    def forward(self, tokens: Tensor) -> Tensor:
        x = self.embed(tokens) * self.scale  # (B, T, D)
        for block in self.blocks:
            x = block(x, self.turns[: tokens.shape[1]])
        return self.norm(x) @ self.embed.weight.t()  # (B, T, V), tied


def same_weights(ours: DecoderOnlyLM) -> LlamaStyleLM:
    """The reference with our model's weights."""
    ref = LlamaStyleLM(ours.config)
    with torch.no_grad():
        ref.embed.weight.copy_(ours.embed.embedding.weight)
        ref.norm.weight.copy_(ours.norm.weight)
        for block, layer in zip(ref.blocks, ours.layers, strict=True):
            a, f = layer.self_attn, layer.ffn
            block.qkv.weight.copy_(torch.cat([a.w_q.weight, a.w_k.weight, a.w_v.weight]))
            block.out.weight.copy_(a.w_o.weight)
            block.gate_up.weight.copy_(torch.cat([f.w1.weight, f.w3.weight]))
            block.down.weight.copy_(f.w2.weight)
            block.norm1.weight.copy_(layer.norm1.weight)
            block.norm2.weight.copy_(layer.norm2.weight)
    return ref


@contextlib.contextmanager
def explicit_mask() -> Iterator[None]:
    """Ours with the causal mask handed to PyTorch as a tensor (``mark_causal`` switched off)."""
    marking = lm.mark_causal
    lm.mark_causal = lambda mask: mask
    try:
        yield
    finally:
        lm.mark_causal = marking


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, tokens: Tensor) -> None:
    logits = model(tokens[:, :-1])  # (B, T, V)
    loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
    loss.backward()
    optimizer.step()
    for parameter in model.parameters():  # the gradients dropped, not zeroed: the next backward writes them anew
        parameter.grad = None


def measure(rounds: int, steps: int, batch: int, length: int) -> dict[str, float]:
    torch.manual_seed(0)
    ours = DecoderOnlyLM(make_config()).train()
    models = {
        "ours (is_causal, no mask)": ours,
        "ours (explicit mask)": ours,
        "Llama-style reference": same_weights(ours),
    }
    optimizers = {name: torch.optim.AdamW(m.parameters(), lr=1e-4) for name, m in models.items()}
    tokens = torch.randint(3, 1000, (batch, length + 1))
    times: dict[str, list[float]] = {name: [] for name in models}
    names = list(models)
    for round_ in range(rounds + 1):  # the first round warms up and is not counted
        for name in names[round_ % 3 :] + names[: round_ % 3]:  # each variant first in turn
            model = models[name]
            with explicit_mask() if "explicit" in name else contextlib.nullcontext():
                start = time.process_time()
                for _ in range(steps):
                    train_step(model, optimizers[name], tokens)
                times[name].append((time.process_time() - start) / steps)
    return {name: statistics.median(values[1:]) for name, values in times.items()}


def table(medians: dict[str, float], batch: int, length: int) -> str:
    reference = medians["Llama-style reference"]
    c = make_config()
    lines = [
        f"## Chapter 13's model in training against a Llama-style reference (`python -m benchmarks.lm_training`, "
        f"{time.strftime('%Y-%m-%d')})",
        "",
        f"D={c.d_model}, H={c.n_heads}, Hkv={c.n_kv_heads}, {c.n_layers} layers, SwiGLU d_ff={c.d_ff}, V={c.vocab_size}, "
        f"batch {batch} × {length} tokens; forward + backward + AdamW; one thread, CPU time, medians; "
        f"{platform.processor() or platform.machine()}, torch {torch.__version__}.",
        "",
        "| variant | s per step | speed vs reference |",
        "|---|---:|---:|",
    ]
    lines += [f"| {name} | {seconds:.3f} | {reference / seconds:.2f}× |" for name, seconds in medians.items()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=3, help="training steps per variant per round")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--no-append", action="store_true", help=f"do not append the table to {RESULTS.name}")
    args = parser.parse_args()
    torch.set_num_threads(1)
    text = table(measure(args.rounds, args.steps, args.batch, args.length), args.batch, args.length)
    print(text)
    if not args.no_append:
        with RESULTS.open("a", encoding="utf-8") as results:
            results.write("\n" + text)


if __name__ == "__main__":
    main()
