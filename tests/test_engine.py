"""The inference engine (transformer_course_tools/engine/) against the learner's modules: the same tokens
for every model family and precision, a plan made once per model and never stale, refusals in one
line, and an engine that loads while a room is still being written."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from transformer_course import Transformer, TransformerConfig, beam_search, greedy_decode, sample
from transformer_course.lm import DecoderOnlyConfig, DecoderOnlyLM, generate
from transformer_course.quantize import quantize
from transformer_course_tools.engine import ENGINE
from transformer_course_tools.engine.plan import plan_for

ROOT = Path(__file__).resolve().parent.parent


def redraw(model: torch.nn.Module, gain: float, embedding_std: float, seed: int = 1) -> torch.nn.Module:
    """Every tensor of ``model`` drawn at random (norm gains around 1, biases around 0, matrices
    ``gain``/√fan-in, embeddings ``embedding_std``), so that a wrong norm or bias would show. An
    untrained model's next token then depends mostly on the last one: the sizes below were chosen
    (by trying) so that each family wanders over many tokens instead of repeating one."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator)
            if p.dim() > 1:
                p.copy_(noise * (embedding_std if "embed" in name else gain / p.shape[1] ** 0.5))
            else:
                p.copy_(("norm" in name and name.endswith("weight")) + 0.2 * noise)
    return model.eval()


def translator(norm_first: bool, tgt_vocab: int = 130, **overrides) -> Transformer:
    torch.manual_seed(0)
    settings = dict(n_encoder_layers=2, n_decoder_layers=2, max_len=64, dropout=0.0, tie_output=False) | overrides
    config = TransformerConfig(120, tgt_vocab, d_model=32, n_heads=4, d_ff=64, norm_first=norm_first, **settings)
    return redraw(Transformer(config), *((1.0, 2.0) if norm_first else (0.5, 1.0)))


LANGUAGE_MODELS = {
    "2017": dict(),  # post-LN, LayerNorm, sinusoids, ReLU
    "modern": dict(modern=True),  # pre-LN, RMSNorm, RoPE, SwiGLU
    "grouped": dict(modern=True, n_kv_heads=2),  # and 4 query heads sharing 2 key/value heads
    "gpt-2": dict(norm_first=True, positional="learned", feed_forward="gelu_tanh", scale_embedding=False),
    "untied": dict(modern=True, n_kv_heads=1, bias=True, tie_output=False),
}


def language_model(family: str, n_layers: int = 2) -> DecoderOnlyLM:
    settings = dict(LANGUAGE_MODELS[family])
    modern = settings.pop("modern", False)
    torch.manual_seed(0)
    make = DecoderOnlyConfig.modern if modern else DecoderOnlyConfig
    config = make(150, d_model=32, n_heads=4, n_layers=n_layers, max_len=64, dropout=0.0, **settings)
    return redraw(DecoderOnlyLM(config), 2.0, 0.1)


def in_precision(model: torch.nn.Module, precision: str) -> torch.nn.Module:
    return model if precision == "float32" else quantize(model, precision)


def _sources() -> torch.Tensor:
    src = torch.randint(4, 120, (3, 9), generator=torch.Generator().manual_seed(2))  # (B, S)
    src[1, 6:] = 0  # one sentence with padding
    return src


def _prompt() -> torch.Tensor:
    return torch.randint(4, 150, (2, 5), generator=torch.Generator().manual_seed(3))  # (B, T)


def _varied(tokens: torch.Tensor) -> None:
    """The test means something only if the model chose more than one token per row."""
    assert all(len(set(row.tolist())) > 2 for row in tokens.flatten(0, -2)), tokens


@pytest.mark.parametrize("precision", ["float32", "bf16", "int8"])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_a_translator_gives_the_same_tokens_on_both_paths(norm_first: bool, precision: str) -> None:
    model, src = in_precision(translator(norm_first), precision), _sources()
    modules, engine = (greedy_decode(model, src, max_len=20, path=path) for path in ("modules", ENGINE))
    _varied(modules)
    assert torch.equal(modules, engine)
    (modules, m_scores), (engine, e_scores) = (
        beam_search(model, src, 3, 20, n_best=3, path=p) for p in ("modules", ENGINE)
    )
    assert torch.equal(modules[:, 0], engine[:, 0]), "the best hypotheses"
    if precision != "bf16":  # bfloat16's 8 bits can reorder the runners-up, whose scores nearly tie
        assert torch.equal(modules, engine) and torch.allclose(m_scores, e_scores, atol=1e-4, rtol=0)
    drawn = [
        sample(model, src, 20, top_k=20, generator=torch.Generator().manual_seed(5), path=p)
        for p in ("modules", ENGINE)
    ]
    assert torch.equal(*drawn), "the same draws"


@pytest.mark.parametrize("precision", ["float32", "bf16", "int8"])
@pytest.mark.parametrize("family", list(LANGUAGE_MODELS))
def test_a_language_model_gives_the_same_tokens_on_both_paths(family: str, precision: str) -> None:
    model, prompt = in_precision(language_model(family), precision), _prompt()
    modules, engine = (generate(model, prompt, 25, path=path) for path in ("modules", ENGINE))
    _varied(modules[:, 5:])
    assert torch.equal(modules, engine)
    drawn = [
        generate(model, prompt, 25, temperature=1.0, top_p=0.9, generator=torch.Generator().manual_seed(4), path=p)
        for p in ("modules", ENGINE)
    ]  # fmt: skip
    assert torch.equal(*drawn), "the same draws"


def test_the_plan_is_made_once_per_model() -> None:
    model = translator(False)
    assert plan_for(model) is plan_for(model)
    greedy_decode(model, _sources(), max_len=5, path=ENGINE)
    assert plan_for(model) is plan_for(model)


def _changes(model: torch.nn.Module) -> dict:
    """Ways a model's parameters change after a plan was made."""
    other = redraw(translator(False), 0.5, 1.0, seed=9)

    def train_step() -> None:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        src = _sources()
        model.train()
        model(src, src[:, :5].clamp(max=129)).float().pow(2).mean().backward()
        optimizer.step()
        model.eval()

    return {
        "a training step": train_step,
        "load_state_dict": lambda: model.load_state_dict(other.state_dict()),
        "a write through .data": lambda: model.output.weight.data.copy_(other.output.weight),
        "a parameter replaced": lambda: setattr(
            model.output, "weight", torch.nn.Parameter(other.output.weight.clone())
        ),
    }


@pytest.mark.parametrize(
    "change", ["a training step", "load_state_dict", "a write through .data", "a parameter replaced"]
)
def test_a_plan_is_never_stale(change: str) -> None:
    model, src = translator(False), _sources()
    before = plan_for(model)
    greedy_decode(model, src, max_len=12, path=ENGINE)
    _changes(model)[change]()
    assert plan_for(model) is not before, f"{change}: the plan was not made again"
    assert torch.equal(greedy_decode(model, src, max_len=12, path=ENGINE), greedy_decode(model, src, max_len=12))


def test_bad_paths_are_refused_in_one_line() -> None:
    model, src = translator(False), _sources()
    with pytest.raises(ValueError, match="path must be 'modules'"):
        greedy_decode(model, src, path="fast")
    with pytest.raises(ValueError, match="use_cache=False is the modules' reference"):
        beam_search(model, src, 2, use_cache=False, path=ENGINE)
    lm = language_model("modern")
    with pytest.raises(ValueError, match="path must be 'modules'"):
        generate(lm, _prompt(), 3, path="Engine")


def test_a_part_the_engine_does_not_know_is_refused() -> None:
    from transformer_course.sublayer import no_residual

    torch.manual_seed(0)
    config = TransformerConfig(50, 50, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1)
    model = Transformer(config, connection=no_residual).eval()
    with pytest.raises(ValueError, match="decode this model with path='modules'"):
        greedy_decode(model, _sources().clamp(max=49), max_len=3, path=ENGINE)
    assert greedy_decode(model, _sources().clamp(max=49), max_len=3).shape[0] == 3  # the modules' path runs it


def _python(code: str, cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_engine_loads_while_a_room_is_broken(tmp_path: Path) -> None:
    """Importing the engine imports no room, so a learner's room in progress cannot stop it."""
    shutil.copytree(
        ROOT / "transformer_course", tmp_path / "transformer_course", ignore=shutil.ignore_patterns("__pycache__")
    )
    (tmp_path / "transformer_course" / "multihead.py").write_text("def split_heads(:\n", encoding="utf-8")
    code = (
        "import sys, transformer_course_tools.engine, transformer_course_tools.engine.plan, transformer_course_tools.engine.run; "
        "print(sorted(m for m in sys.modules if m.startswith('transformer_course.') and '.engine' not in m))"
    )
    run = _python(code, tmp_path, tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "[]", run.stdout


@pytest.mark.parametrize("precision", ["float32", "int8"])
def test_beam_search_over_a_vocabulary_of_many_blocks_gives_the_same_tokens_on_both_paths(precision: str) -> None:
    """With 1,500 target tokens the engine finds each hypothesis's best tokens block by block
    (:func:`~transformer_course_tools.engine.search.largest`), and 4 beams share each sentence's memory."""
    model, src = in_precision(translator(False, tgt_vocab=1500), precision), _sources()
    (modules, m_scores), (engine, e_scores) = (
        beam_search(model, src, 4, 20, n_best=4, path=p) for p in ("modules", ENGINE)
    )
    _varied(modules[:, 0])
    assert torch.equal(modules, engine)
    assert torch.allclose(m_scores, e_scores, atol=1e-4, rtol=0)


@pytest.mark.parametrize(("vocab", "k"), [(3, 3), (1023, 2), (1024, 3), (1025, 3), (5000, 1), (58101, 4)])
def test_largest_finds_what_topk_finds(vocab: int, k: int) -> None:
    """The k largest of each row, found block by block, equal ``topk``'s: values and indices, with
    the best ones in the short last block, in one block together, or spread over blocks."""
    from transformer_course_tools.engine.search import largest

    generator = torch.Generator().manual_seed(vocab)
    x = torch.randn(6, 3, vocab, generator=generator)
    x[0, 0, -1] = 10.0  # the best in the last, short block
    middle = min(vocab // 2, vocab - k)
    x[0, 1, middle : middle + k] = 20.0 + torch.arange(k)  # the best side by side (one block)
    x[1, 2, :: max(1, vocab // k)] += 30.0  # each of the best in a block of its own
    for rows in (x, x[:, 1]):  # (6, 3, V) and a non-contiguous (6, V)
        values, indices = largest(rows, k)
        want_values, want_indices = rows.topk(k, dim=-1)
        assert torch.equal(values, want_values)
        assert torch.equal(indices, want_indices)


@pytest.mark.parametrize("vocab", [3, 50, 2000])
def test_beam_step_on_a_shortlist_keeps_the_survivors_of_the_whole_vocabulary(vocab: int) -> None:
    """Given each hypothesis's K best tokens, chapter 09's beam_step chooses what it chooses from all
    K·V candidates: with finished hypotheses, empty slots (-inf) and a vocabulary smaller than K."""
    from transformer_course.decoding import beam_step
    from transformer_course_tools.engine.search import on_a_shortlist

    generator = torch.Generator().manual_seed(vocab)
    batch, beams, eos = 3, 5, 1
    for _ in range(20):
        scores = torch.randn(batch, beams, generator=generator) * 3
        scores[0, 3:] = float("-inf")  # empty slots
        log_probs = torch.randn(batch, beams, vocab, generator=generator).log_softmax(-1)
        log_probs[1, 0, eos] = 0.0  # a hypothesis that surely ends
        finished = torch.rand(batch, beams, generator=generator) < 0.3
        lengths = torch.randint(1, 9, (batch, beams), generator=generator)
        args = (scores, log_probs, finished, lengths, eos, 0, 0.6)
        want, got = beam_step(*args), on_a_shortlist(beam_step)(*args)
        real = want[2].isfinite()  # the tokens of an empty slot are arbitrary
        for a, b in zip(want, got, strict=True):
            assert torch.equal(a[real], b[real])


def test_in_place_keeps_the_survivors_and_moves_only_a_hypothesis_s_second_survivors() -> None:
    """The same survivors as beam_step's, in another order: a hypothesis's first survivor in its
    own slot, so the rows that move are as many as the hypotheses no survivor continues."""
    from transformer_course.decoding import beam_step
    from transformer_course_tools.engine.search import in_place

    generator = torch.Generator().manual_seed(0)
    batch, beams, vocab = 6, 5, 40
    moves = 0
    for _ in range(20):
        scores = torch.randn(batch, beams, generator=generator) * 3
        log_probs = (torch.randn(batch, beams, vocab, generator=generator) * 2).log_softmax(-1)
        finished = torch.rand(batch, beams, generator=generator) < 0.3
        lengths = torch.randint(1, 9, (batch, beams), generator=generator)
        args = (scores, log_probs, finished, lengths, 1, 0, 0.6)
        want, got = beam_step(*args), in_place(beam_step)(*args)
        key = lambda out, b: sorted(zip(*(t[b].tolist() for t in out), strict=True))  # noqa: E731
        for b in range(batch):  # the same (origin, token, score, finished, length) survivors
            assert key(got, b) == key(want, b)
        origin = got[0]
        for b in range(batch):
            parents = set(origin[b].tolist())
            for parent in parents:  # its first survivor stays in its slot
                assert origin[b, parent] == parent
            moved = int((origin[b] != torch.arange(beams)).sum())
            assert moved == beams - len(parents)
            moves += moved
    assert moves > 0  # the draws did make hypotheses with two survivors


@pytest.mark.parametrize("sources_move", [False, True], ids=["sources-stay", "a-source-moves"])
def test_the_cache_reorder_moves_each_row_to_its_place(sources_move: bool) -> None:
    """Row i of every layer's keys and values becomes the earlier row rows[i], on both ways of
    copying: straight (no source moves) and through a copy (a source is itself replaced)."""
    from transformer_course_tools.engine.run import KVBuffers

    plan = plan_for(translator(False))
    kv = KVBuffers(plan, batch=6, capacity=5)
    kv.length = 3
    for buffer in (kv.every_key, kv.every_value):
        buffer.copy_(torch.randn(buffer.shape))
    rows = torch.tensor([1, 0, 2, 2, 0, 5] if sources_move else [0, 0, 2, 2, 4, 4])
    before = [t.clone() for t in kv.keys + kv.values]
    kv.reorder(rows)
    for old, new in zip(before, kv.keys + kv.values, strict=True):
        assert torch.equal(new[:, :, :3], old[rows][:, :, :3])


def test_the_forbidden_tokens_live_in_the_plan_s_bias_not_the_model_s() -> None:
    """<pad> and <bos> are -inf in the translator plan's output bias, in every precision; the
    model's own bias (and int8 model's) is left as it was."""
    for model in (translator(False), in_precision(translator(False), "bf16"), quantize(translator(False), "int8")):
        bias = model.output.bias.detach().clone()
        plan = plan_for(model)
        c = model.config
        assert plan.output.bias[[c.pad_id, c.bos_id]].isneginf().all()
        assert plan.output.bias.isfinite().sum() == c.tgt_vocab_size - 2
        assert torch.equal(model.output.bias, bias)
