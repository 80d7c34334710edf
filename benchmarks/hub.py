"""Chapter 16: a real translator's shape, decoded by the course and by ``transformers``, in three precisions.

    python -m benchmarks.hub                  # opus-mt-en-de's shape, batch 1 and 16 (a few minutes)
    python -m benchmarks.hub --quick          # a tiny Marian model, seconds (tests/test_benchmarks.py)
    python -m benchmarks.hub --accuracy       # the shipped translator in float32, bf16 and int8
    python -m benchmarks.hub --accuracy --sentences model.pt   # and a sentence translator of chapter 12

A ``MarianMTModel`` with opus-mt-en-de's configuration and random weights (no download) is
converted with :func:`~transformer_course.from_marian`. Its ``<eos>`` is switched off the same way
in both (``final_logits_bias[eos] = -1e4``, copied by the converter), so that every run makes
exactly ``--tokens`` tokens: our ``greedy_decode(model, src, max_len=N)`` and ``transformers``'
``generate(max_new_tokens=N, min_new_tokens=N)`` (and no ``forced_eos_token_id``, which Marian's
configuration sets: it would force ``<eos>`` at the last step). Ours never generates ``<pad>`` (Marian's
``<bos>`` too); ``generate`` gets ``suppress_tokens=[pad]`` for the same rule, so greedy tokens
must be identical (checked). Both take the source with its attention mask, both use a KV cache.
Beam search: ours ranks by the GNMT penalty, ``transformers`` by score / length; with every
hypothesis N tokens long neither changes the ranking, but ties may break differently, so only
the times are compared.

Every variant runs interleaved with the others (``benchmarks.decoding.interleaved``), one thread,
CPU time of this process by default (steady on a shared machine); the ratios are medians of the
same run. Bytes read per generated token are counted, not measured: the weights one decoding
step reads (the decoder's and the output layer's; the cross-attention's W^K and W^V run once, on
the source) divided by the batch, plus the key/value cache each row reads (its own keys and
values so far, and the source's), averaged over the N steps.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
import warnings

import torch
from torch import nn

from benchmarks.decoding import interleaved
from transformer_course import beam_search, from_marian, greedy_decode, quantize
from transformer_course_tools.models import published

OPUS_MT_EN_DE = published.config(published.OPUS_MT_EN_DE)  # its published config.json
TINY = OPUS_MT_EN_DE | dict(
    vocab_size=301, decoder_vocab_size=301, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
    decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, pad_token_id=300, decoder_start_token_id=300,
    max_position_embeddings=128,
)  # fmt: skip
PRECISIONS = ("float32", "bf16", "int8")


def marian_models(shape: dict) -> tuple[nn.Module, dict[str, nn.Module]]:
    """A random ``MarianMTModel`` of ``shape`` that never ends early, and ours in each precision."""
    from transformers import MarianConfig, MarianMTModel

    torch.manual_seed(0)
    hf = MarianMTModel(MarianConfig(**shape)).eval()
    with torch.no_grad():
        hf.final_logits_bias[0, shape["eos_token_id"]] = -1e4  # never <eos>: every run makes N tokens
    hf.generation_config.forced_eos_token_id = None  # Marian's default forces <eos> as the last token
    ours = from_marian(hf)
    return hf, {"float32": ours} | {p: quantize(ours, p) for p in PRECISIONS[1:]}


def hf_generate(hf: nn.Module, src: torch.Tensor, tokens: int, beams: int) -> torch.Tensor:
    """``transformers``' decoding with our rules: N tokens, never ``<pad>``; (B, N) without the start token."""
    pad = hf.config.pad_token_id
    out = hf.generate(
        input_ids=src, attention_mask=src != pad, do_sample=False, num_beams=beams, max_new_tokens=tokens,
        min_new_tokens=tokens, suppress_tokens=[pad], num_return_sequences=1, use_cache=True,
    )  # fmt: skip
    return out[:, 1:]


def step_bytes(model: nn.Module, batch: int, src_len: int, tokens: int) -> dict[str, float]:
    """Bytes one generated token reads, on average over ``tokens`` greedy steps: ``{"weights", "kv", "total"}``.

    Weights: every tensor of the decoder except the cross-attention's W^K and W^V (and their
    biases), and the output layer's (int8: its int8 matrix, scales and bias), shared by the batch.
    Key/value cache: each row reads its keys and values so far (1 … N) and the source's S.
    """
    read = {id(t): t for name, t in model.decoder.named_parameters() if not _cross_kv(name)}
    read |= {id(t): t for t in model.output.parameters()}
    weights = sum(t.numel() * t.element_size() for t in read.values())
    layers, d_model = model.config.n_decoder_layers, model.config.d_model
    element = 2 if next(model.decoder.parameters()).dtype == torch.bfloat16 else 4
    mean_past = (tokens + 1) / 2  # positions of the self-attention cache, averaged over steps 1 … N
    kv = layers * 2 * d_model * element * (mean_past + src_len)  # keys and values, self- and cross-attention
    return {"weights": weights / batch, "kv": kv, "total": weights / batch + kv}


def _cross_kv(name: str) -> bool:
    return ".cross_attn.w_k." in name or ".cross_attn.w_v." in name


def speed(shape: dict, batches: list[int], src_len: int, tokens: int, rounds: int, clock: str) -> None:
    """Time ours (three precisions) and ``transformers`` (float32), greedy and beam 4, and print the ratios."""
    hf, models = marian_models(shape)
    tick = time.process_time if clock == "cpu" else time.perf_counter
    for batch in batches:
        generator = torch.Generator().manual_seed(batch)
        src = torch.randint(1, shape["pad_token_id"], (batch, src_len), generator=generator)  # (B, S), no padding
        greedy = greedy_decode(models["float32"], src, max_len=tokens)  # (B, N)
        assert greedy.shape == (batch, tokens), f"expected {tokens} tokens, got {tuple(greedy.shape)}"
        assert torch.equal(hf_generate(hf, src, tokens, 1), greedy), "transformers' greedy tokens differ from ours"
        agree = {p: (greedy_decode(m, src, max_len=tokens) == greedy).float().mean().item() for p, m in models.items()}
        fns = _variants(hf, models, src, tokens)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        with torch.inference_mode():
            times = interleaved(fns, torch.device("cpu"), rounds, tick)
        median = {name: statistics.median(t) for name, t in times.items()}
        print(f"\nbatch {batch}, source {src_len} tokens, {tokens} new tokens; {rounds} rounds, {clock} clock, "
              f"load average {load:.2f} at start; greedy tokens identical to transformers': yes")  # fmt: skip
        print(f"  {'variant':32} {'s, median':>10} {'(min–max)':>15} {'tokens/s':>9}")
        for name, seconds in median.items():
            spread = f"{min(times[name]):.3f}–{max(times[name]):.3f}"
            print(f"  {name:32} {seconds:10.3f} {spread:>15} {batch * tokens / seconds:9.1f}")
        for kind in ("greedy", "beam 4"):
            ratio = median[f"transformers float32, {kind}"] / median[f"ours float32, {kind}"]
            print(f"  {kind}: transformers / ours float32 = {ratio:.2f}× (above 1: ours is faster)")
        for p in PRECISIONS:
            b = step_bytes(models[p], batch, src_len, tokens)
            ratio = median["ours float32, greedy"] / median[f"ours {p}, greedy"]
            print(f"  ours {p:8} speed-up over float32 {ratio:5.2f}×; MB read per generated token: weights "
                  f"{b['weights'] / 1e6:7.2f} + KV cache {b['kv'] / 1e6:5.2f} = {b['total'] / 1e6:7.2f}; "
                  f"greedy tokens equal to float32's: {agree[p]:.1%}")  # fmt: skip


def _variants(hf: nn.Module, models: dict[str, nn.Module], src: torch.Tensor, tokens: int) -> dict:
    """name → a call that decodes ``src``: ours greedy in each precision, then beam 4, and ``transformers``'."""

    def greedy(model: nn.Module):
        return lambda: greedy_decode(model, src, max_len=tokens)

    return {f"ours {p}, greedy": greedy(m) for p, m in models.items()} | {
        "transformers float32, greedy": lambda: hf_generate(hf, src, tokens, 1),
        "ours float32, beam 4": lambda: beam_search(models["float32"], src, 4, tokens),
        "transformers float32, beam 4": lambda: hf_generate(hf, src, tokens, 4),
    }


def accuracy(sentences: str | None) -> None:
    """The shipped numbers translators (test split: exact match, BLEU) and optionally chapter 12's
    sentence translator (its test split: BLEU on text), in float32, bf16 and int8."""
    from transformer_course import load_pretrained, load_task
    from transformer_course.decoding import greedy_decode
    from transformer_course.evaluation import evaluate

    task = load_task("numbers-en-de")
    for name in ("numbers-en-de", "numbers-en-de-undertrained"):
        model = load_pretrained(name).model
        for p in PRECISIONS:
            quantized = model if p == "float32" else quantize(model, p)
            print(
                f"{name:28} {p:8} test ({len(task.test)}): {evaluate(quantized, task.test, task, decode=greedy_decode)}",
                flush=True,
            )
    if sentences:
        from transformer_course.checkpoint import load_checkpoint
        from transformer_course.subwords import SubwordTokenizer
        from transformer_course_tools.models.sources import Source, held_out_task

        checkpoint = load_checkpoint(sentences)
        task = held_out_task(
            Source.from_dict(checkpoint.extra["source"]), SubwordTokenizer.from_dict(checkpoint.tokenizer)
        )
        for p in PRECISIONS:
            quantized = checkpoint.model if p == "float32" else quantize(checkpoint.model, p)
            scores = evaluate(quantized, task.test, task, bleu_on="text", decode=greedy_decode)
            print(f"{task.name:28} {p:8} test ({len(task.test)}): {scores}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a tiny Marian model, batch 1 and 2, a few tokens")
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--source", type=int, default=24, help="source tokens")
    parser.add_argument("--tokens", type=int, default=48, help="new tokens per sentence")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="cpu")
    parser.add_argument("--accuracy", action="store_true", help="score the shipped translators instead of timing")
    parser.add_argument("--sentences", help="with --accuracy: a sentence translator's checkpoint (chapter 12)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", message=".*generation flags.*")
    print(f"torch {torch.__version__}, {platform.processor() or platform.machine()}, 1 thread, "
          f"ATEN_CPU_CAPABILITY={os.environ.get('ATEN_CPU_CAPABILITY', '(unset)')}")  # fmt: skip
    if args.accuracy:
        accuracy(args.sentences)
    elif args.quick:
        speed(TINY, [1, 2], src_len=6, tokens=5, rounds=min(args.rounds, 2), clock=args.clock)
    else:
        speed(OPUS_MT_EN_DE, args.batch, args.source, args.tokens, args.rounds, args.clock)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
