"""Random models for the engine's promise (issue 52): the same tokens as the learner's modules, for
every model, precision and batch.

:func:`random_translator` and :func:`random_language_model` draw a model of a random configuration
(sizes, heads, d_k and d_v down to 1, pre- or post-LN, activations, tied or shared embeddings; for
language models LayerNorm or RMSNorm, sinusoids, learned positions or RoPE, SwiGLU, grouped heads)
with every tensor random (:func:`tests.test_engine.redraw`). :func:`differences` decodes one in a
precision on both paths, and each of two sentences alone, and names what differs.
``tests/test_engine_promise.py`` runs a few; the report's suite runs more::

    python -m tests.engine_models 100     # 100 translators and 100 language models × 3 precisions
"""

from __future__ import annotations

import random
import sys

import torch
import torch.nn.functional as F

from tests.test_engine import in_precision, redraw
from transformer_course import Transformer, TransformerConfig, beam_search, greedy_decode, sample
from transformer_course.lm import DecoderOnlyConfig, DecoderOnlyLM, generate
from transformer_course_tools.engine import ENGINE

PRECISIONS = ("float32", "bf16", "int8")
PATHS = {"modules": "modules", "engine": ENGINE}


def random_translator(seed: int) -> Transformer:
    pick = random.Random(seed)
    d_model, n_heads = pick.choice([(8, 2), (16, 4), (24, 3), (32, 4), (12, 1)])
    share = pick.random() < 0.25
    src_vocab, tgt_vocab = pick.choice([30, 90, 300]), pick.choice([12, 90, 300])
    config = TransformerConfig(
        tgt_vocab if share else src_vocab, tgt_vocab, d_model=d_model, n_heads=n_heads, d_ff=pick.choice([16, 40]),
        n_encoder_layers=pick.choice([0, 1, 2]), n_decoder_layers=pick.choice([1, 2]), dropout=0.0,
        d_k=pick.choice([None, None, 4]), d_v=pick.choice([None, None, 1, 3]), max_len=40,
        norm_first=pick.random() < 0.5, share_embeddings=share, tie_output=share or pick.random() < 0.5,
        activation=pick.choice(["relu", "gelu", "gelu_tanh", "swish"]), scale_embedding=pick.random() < 0.7,
    )  # fmt: skip
    torch.manual_seed(seed)
    gains = (1.0, 2.0) if config.norm_first else (0.5, 1.0)
    return redraw(Transformer(config), *gains, seed=seed)


def random_language_model(seed: int) -> DecoderOnlyLM:
    pick = random.Random(10_000 + seed)
    d_model, n_heads, n_kv_heads = pick.choice([(16, 4, 2), (16, 4, 4), (24, 2, 1), (32, 4, 1), (12, 3, 3)])
    rope = pick.random() < 0.4 and (d_model // n_heads) % 2 == 0
    config = DecoderOnlyConfig(
        pick.choice([20, 150]), d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv_heads,
        n_layers=pick.choice([1, 2]), d_ff=pick.choice([16, 40]), max_len=48, dropout=0.0,
        norm_first=pick.random() < 0.6, norm=pick.choice(["layernorm", "rmsnorm"]),
        positional="rope" if rope else pick.choice(["sinusoidal", "learned"]),
        feed_forward=pick.choice(["relu", "swiglu", "gelu", "gelu_tanh", "swish"]), bias=pick.random() < 0.5,
        scale_embedding=pick.random() < 0.5, tie_output=pick.random() < 0.6,
    )  # fmt: skip
    torch.manual_seed(seed)
    return redraw(DecoderOnlyLM(config), 2.0, 0.1, seed=seed)


def _sources(model: Transformer, seed: int) -> torch.Tensor:
    vocab = model.config.src_vocab_size
    src = torch.randint(3, vocab, (3, 7), generator=torch.Generator().manual_seed(seed))  # (B, S)
    src[1, 4:] = model.config.pad_id  # a shorter sentence
    return src


def _prompt(model: DecoderOnlyLM, seed: int) -> torch.Tensor:
    vocab = model.config.vocab_size
    return torch.randint(3, vocab, (3, 4), generator=torch.Generator().manual_seed(seed))  # (B, T)


def _padded(tokens: torch.Tensor, length: int, pad: int) -> torch.Tensor:
    return F.pad(tokens, (0, length - tokens.shape[-1]), value=pad)


def _alone(decode, path: object, x: torch.Tensor, real: list[int]) -> list[torch.Tensor]:  # noqa: ANN001
    """Each row decoded alone (its own real tokens only)."""
    return [decode(x[i : i + 1, : real[i]], path) for i in range(x.shape[0])]


def decoders(model: torch.nn.Module, seed: int = 0) -> tuple[torch.Tensor, list[int], dict]:
    """The inputs of ``model`` (sources or prompts), each row's real length, and the ways
    :func:`differences` decodes them: kind → ``decode(inputs, path)``."""
    translator = isinstance(model, Transformer)
    pad = model.config.pad_id
    if translator:
        x = _sources(model, seed)
        real = (x != pad).sum(dim=1).tolist()
        ways = {
            "greedy": lambda inputs, path: greedy_decode(model, inputs, max_len=12, path=path),
            "beam": lambda inputs, path: beam_search(model, inputs, 3, 12, n_best=3, path=path)[0],
            "sample": lambda inputs, path: sample(model, inputs, 12, generator=torch.Generator().manual_seed(7),
                                                  path=path),
        }  # fmt: skip
    else:
        x = _prompt(model, seed)
        real = [x.shape[1]] * x.shape[0]
        ways = {
            "greedy": lambda inputs, path: generate(model, inputs, 14, path=path),
            "sample": lambda inputs, path: generate(model, inputs, 14, temperature=1.0, top_k=20,
                                                    generator=torch.Generator().manual_seed(7), path=path),
        }  # fmt: skip
    return x, real, ways


def differences(model: torch.nn.Module, precision: str, seed: int = 0) -> list[str]:
    """What differs between the two paths for ``model`` in ``precision``, or between a row decoded
    in its batch and alone: [] when nothing does."""
    model = in_precision(model, precision)
    pad = model.config.pad_id
    x, real, ways = decoders(model, seed)
    found = []
    for kind, decode in ways.items():
        out = {name: decode(x, path) for name, path in PATHS.items()}
        if not torch.equal(out["modules"], out["engine"]):
            found.append(f"{kind}: the two paths")
        if kind == "sample":
            continue  # a row alone draws other random numbers than in its batch
        for name, path in PATHS.items():
            alone = _alone(decode, path, x, real)
            for i, row in enumerate(alone):
                length = max(row.shape[-1], out[name].shape[-1])
                if not torch.equal(_padded(row[0], length, pad), _padded(out[name][i], length, pad)):
                    found.append(f"{kind}: row {i} alone and in its batch ({name})")
    return found


def main(count: int) -> int:
    torch.set_num_threads(1)
    compared = same = 0
    for kind, make in (("translator", random_translator), ("language model", random_language_model)):
        for seed in range(count):
            for precision in PRECISIONS:
                found = differences(make(seed), precision, seed)
                compared, same = compared + 1, same + (not found)
                if found:
                    print(f"{kind} {seed} {precision}: {'; '.join(found)}", flush=True)
    print(f"{same} of {compared} random models × precisions identical on both paths, in a batch and alone")
    return 0 if same == compared else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10))
