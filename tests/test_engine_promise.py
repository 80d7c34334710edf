"""The engine keeps its promise (issue 52): the same tokens as the learner's modules for every model,
precision, batch and learner; a plan never stale; only the rooms a model is made of read; bad input
refused as on the modules' path. (``tests/test_engine.py`` holds the engine's first tests.)"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from tests.engine_models import PRECISIONS, decoders, differences, random_language_model, random_translator
from tests.learner_parts import ENGINE_TOO, per_exercise, replace_everywhere
from tests.test_engine import in_precision, language_model, translator
from transformer_course import beam_search, greedy_decode, sample
from transformer_course.lm import generate
from transformer_course.quantize import quantize
from transformer_course_tools.engine import ENGINE
from transformer_course_tools.engine.plan import plan_for
from transformer_course_tools.exercises.checks import EXERCISES

ROOT = Path(__file__).resolve().parent.parent
PATHS = ("modules", ENGINE)


def _sources() -> torch.Tensor:
    src = torch.randint(4, 120, (3, 9), generator=torch.Generator().manual_seed(2))  # (B, S)
    src[1, 6:] = 0
    return src


# -- 1. the same tokens, every precision, in a batch and alone ------------------------------------


@pytest.fixture(scope="module")
def test_numbers() -> list[str]:
    from transformer_course.datasets.numbers import numbers_task

    return [english for english, _ in numbers_task().test[:200]]


@pytest.mark.parametrize("name", ["numbers-en-de", "numbers-en-de-undertrained"])
def test_a_shipped_translator_in_int8_decodes_alike_on_both_paths_in_a_batch_and_alone(name: str, test_numbers):
    """200 test numbers in one batch: greedy, beam 4 and a sample the same on both paths; 50 of them
    decoded one by one: the same as in the batch, on both paths (int8 rounds each row by itself)."""
    from transformer_course.batching import pad_sequences
    from transformer_course_tools.models.pretrained import load_pretrained

    checkpoint = load_pretrained(name)
    model = quantize(checkpoint.model, "int8")
    pad = checkpoint.src_vocab.pad_id
    sentences = [checkpoint.src_vocab.encode(english) for english in test_numbers]
    src = pad_sequences(sentences, pad)  # (200, S)
    batch = {}
    for path in PATHS:
        draw = torch.Generator().manual_seed(3)
        batch[path] = (greedy_decode(model, src, path=path), beam_search(model, src, 4, path=path)[0][:, 0],
                       sample(model, src, generator=draw, path=path))  # fmt: skip
    for kind, modules, engine in zip(("greedy", "beam 4", "sample"), *batch.values(), strict=True):
        assert torch.equal(modules, engine), f"{kind}: {int((modules != engine).any(-1).sum())} rows differ"
    for i in range(0, len(sentences), 4):
        one = torch.tensor([sentences[i]])
        for path in PATHS:
            alone = (greedy_decode(model, one, path=path)[0], beam_search(model, one, 4, path=path)[0][0, 0])
            for kind, row, in_batch in zip(("greedy", "beam 4"), alone, batch[path], strict=False):
                assert torch.equal(row, in_batch[i, : len(row)]) and not in_batch[i, len(row) :].ne(pad).any(), (
                    f"{kind}, sentence {i}: alone {row.tolist()}, in the batch {in_batch[i].tolist()}"
                )


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("seed", range(4))
def test_random_translators_give_the_same_tokens_on_both_paths_in_a_batch_and_alone(seed: int, precision: str):
    """Random configurations (``tests/engine_models.py``: d_v down to 1, activations, tied and shared
    embeddings, no encoder layer): greedy, beam 3 and a sample on both paths, and each sentence alone."""
    assert differences(random_translator(seed), precision, seed) == []


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("seed", range(4))
def test_random_language_models_give_the_same_tokens_on_both_paths_in_a_batch_and_alone(seed: int, precision: str):
    assert differences(random_language_model(seed), precision, seed) == []


def test_bfloat16_reads_the_heads_in_the_layout_of_the_learners_merge_heads() -> None:
    """d_v = 1: ``merge_heads`` returns a view that is not contiguous, and a bfloat16 product on it
    rounds otherwise than on a contiguous copy; the engine reads the heads as the modules do."""
    from tests.test_engine import redraw
    from transformer_course import Transformer, TransformerConfig

    for seed in range(20):
        norm_first = seed % 2 == 0
        torch.manual_seed(seed)
        config = TransformerConfig(60, 70, d_model=16, n_heads=4, d_ff=32, n_encoder_layers=1, n_decoder_layers=2,
                                   d_v=1, max_len=40, dropout=0.0, norm_first=norm_first, tie_output=False)  # fmt: skip
        model = quantize(redraw(Transformer(config), *((1.0, 2.0) if norm_first else (0.5, 1.0)), seed=seed), "bf16")
        src = torch.randint(4, 60, (4, 7), generator=torch.Generator().manual_seed(seed))
        modules, engine = (greedy_decode(model, src, 15, path=path) for path in PATHS)
        assert torch.equal(modules, engine), seed


def test_int8_rounds_each_row_by_itself_on_both_paths() -> None:
    """An int8 product's row does not change with the rows beside it, however large they are (a
    scale per row), in ``Int8Linear`` (the modules) and in the engine's plan alike."""
    model = quantize(translator(False), "int8")
    x = torch.randn(3, 32)
    loud = torch.cat([x, 1000 * torch.randn(5, 32)])  # the same rows, then rows 1000 times larger
    linear, dense = model.decoder.layers[0].ffn.linear1, plan_for(model).layers[0].ffn.up
    for product in (linear, dense):
        assert torch.equal(product(loud)[:3], product(x)), product
        assert torch.equal(product(x[1:2])[0], product(x)[1])
    with torch.no_grad():
        assert torch.equal(linear(x), dense(x)), "the two paths' products are one function"


# -- 2. never stale --------------------------------------------------------------------------------


@pytest.mark.parametrize("precision", ["float32", "int8"])
@pytest.mark.parametrize("write", ["through .data", "through NumPy", "a buffer through NumPy", "load_state_dict"])
def test_the_plan_sees_every_write_to_any_entry(write: str, precision: str) -> None:
    """A write that PyTorch does not count (``.data``, a NumPy view) to one entry of one tensor, or a
    ``load_state_dict`` into an int8 model: both paths decode the new values."""
    model, src = quantize(translator(False), precision) if precision == "int8" else translator(False), _sources()
    before = greedy_decode(model, src, max_len=12, path=ENGINE)
    plan = plan_for(model)
    with torch.no_grad():
        if write == "through .data":
            weight = model.decoder.layers[1].ffn.linear1.weight  # (int8: its whole numbers)
            weight.data[5] = -weight.data[5] if precision == "int8" else weight.data[5] * 30  # one row
        elif write == "through NumPy":
            target = model.decoder.layers[1].ffn.linear1
            array = (target.scale if precision == "int8" else target.weight).numpy()
            array[3] = array[3] * 50  # one row (int8: one row's scale)
        elif write == "a buffer through NumPy":
            model.positional.pe.numpy()[2:7] *= -40  # the positions' table, a buffer
        else:
            changed = {name: value.clone() for name, value in model.state_dict().items()}
            key = "decoder.layers.1.ffn.linear1.scale" if precision == "int8" else "decoder.layers.1.ffn.linear1.weight"
            changed[key] = changed[key] * 50
            model.load_state_dict(changed)
    assert plan_for(model) is not plan, f"a write {write}: the plan was not made again"
    modules, engine = (greedy_decode(model, src, max_len=12, path=path) for path in PATHS)
    assert torch.equal(modules, engine)
    assert not torch.equal(engine, before), "the write changed the tokens: the test means something"


def test_an_unchanged_model_keeps_its_plan() -> None:
    model = quantize(translator(True), "int8")
    greedy_decode(model, _sources(), max_len=4, path=ENGINE)
    assert plan_for(model) is plan_for(model)


# -- 3. the engine reads only the rooms a model is made of ---------------------------------------


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), str(ROOT)])}  # cwd's rooms, ROOT's course side
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _copy_with_broken_rooms(tmp_path: Path, *rooms: str) -> Path:
    shutil.copytree(
        ROOT / "transformer_course", tmp_path / "transformer_course", ignore=shutil.ignore_patterns("__pycache__")
    )
    for room in rooms:
        (tmp_path / "transformer_course" / f"{room}.py").write_text("def half_written(:\n", encoding="utf-8")
    return tmp_path


TRANSLATE = """
import torch
from transformer_course import Transformer, TransformerConfig, beam_search, greedy_decode
from transformer_course_tools.engine import ENGINE
from transformer_course.quantize import quantize
torch.manual_seed(0)
config = TransformerConfig(40, 40, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, norm_first=True)
src = torch.randint(4, 40, (2, 6))
for model in (Transformer(config).eval(), quantize(Transformer(config), "int8"), quantize(Transformer(config), "bf16")):
    assert torch.equal(greedy_decode(model, src, 8), greedy_decode(model, src, 8, path=ENGINE))
    assert torch.equal(beam_search(model, src, 3, 8)[0], beam_search(model, src, 3, 8, path=ENGINE)[0])
print("same")
"""


def test_half_written_chapter_13_rooms_never_break_a_chapter_09_translator(tmp_path: Path) -> None:
    """rotary.py, swiglu.py, rmsnorm.py and grouped.py each with a syntax error: a translator decodes
    on the engine as on the modules, in float32, int8 and bf16."""
    run = _python(TRANSLATE, _copy_with_broken_rooms(tmp_path, "rotary", "swiglu", "rmsnorm", "grouped"))
    assert run.returncode == 0 and run.stdout.strip() == "same", run.stderr[-2000:]


def test_a_room_the_engine_must_read_and_cannot_is_named_in_one_line(tmp_path: Path) -> None:
    code = (
        "import torch\nfrom transformer_course import Transformer, TransformerConfig\n"
        "from transformer_course_tools.engine import ENGINE\n"
        "model = Transformer(TransformerConfig(40, 40, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, "
        "n_decoder_layers=1)).eval()\n"
        "try:\n    ENGINE.predictor(model, torch.randint(4, 40, (2, 6)), 8)\n"
        "except ValueError as error:\n    print(error)\n"
    )
    run = _python(code, _copy_with_broken_rooms(tmp_path, "decoding"))
    lines = run.stdout.strip().splitlines()
    assert run.returncode == 0 and len(lines) == 1, (run.stdout, run.stderr[-2000:])
    assert "transformer_course/decoding.py" in lines[0] and "SyntaxError" in lines[0], lines[0]


# -- 4. the learner's own parts, however written ---------------------------------------------------


def _right_answers(exercise: str) -> list:
    """The right answers written another way in ``tests/attempts`` (left out of the student edition:
    there these tests are skipped)."""
    attempts = pytest.importorskip("tests.attempts").attempts
    found = [a for a in attempts(exercise) if a.right]
    assert found, f"tests/attempts/{exercise}.py has no right answer written another way"
    return found


MODELS = {"translator": random_translator, "language model": random_language_model}
_SEEDS = range(4)  # four random models per kind; seed 1's language model has RoPE, grouped heads, RMSNorm, SwiGLU


def _called_by_the_engine() -> bool:
    """A frame of the engine is on the stack: the engine called this (directly, or in a module it runs)."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("transformer_course_tools.engine"):
            return True
        frame = frame.f_back
    return False


@functools.cache
def engine_calls() -> dict[str, tuple[tuple[str, int, str], ...]]:
    """Exercise id → the (model kind, seed, precision) whose decoding on the engine calls its function, the
    first seed of each kind and precision: every exercise's function wrapped with a recorder while
    :func:`differences` decodes on both paths."""
    from transformer_course_tools.exercises.checks.registry import load_checks

    exercises = load_checks()
    for exercise in exercises.values():  # every room imported, so that each binding is replaced
        exercise.resolve()
    calls: dict[str, set[tuple[str, int, str]]] = {}
    current: list[tuple[str, int, str]] = []

    def recorder(exercise_id: str, function):  # noqa: ANN001, ANN202 - a function or an unbound method
        @functools.wraps(function)
        def recording(*args, **kwargs):  # noqa: ANN202
            if _called_by_the_engine():
                calls.setdefault(exercise_id, set()).add(current[-1])
            return function(*args, **kwargs)

        return recording

    with pytest.MonkeyPatch.context() as monkeypatch:
        for exercise in exercises.values():
            replace_everywhere(exercise, recorder(exercise.id, exercise.resolve()), monkeypatch, ENGINE_TOO)
        for kind, make in MODELS.items():
            for seed, precision in itertools.product(_SEEDS, PRECISIONS):
                current.append((kind, seed, precision))
                assert differences(make(seed), precision, seed) == [], current[-1]
    uses = {}
    for exercise_id, found in calls.items():
        first: dict[tuple[str, str], tuple[str, int, str]] = {}  # one model per (kind, precision) suffices
        for kind, seed, precision in sorted(found):
            first.setdefault((kind, precision), (kind, seed, precision))
        uses[exercise_id] = tuple(first.values())
    return uses


@pytest.mark.complete_edition
def test_the_engine_calls_the_learners_parts_it_is_tested_with() -> None:
    """The recorder sees the calls into a learner's function that the engine is known to make, so the test
    below runs on them (and on any new one)."""
    assert {"ex04_2", "ex09_3", "ex13_1", "ex13_4", "ex16_3"} <= set(engine_calls()), sorted(engine_calls())


@pytest.mark.complete_edition
@pytest.mark.parametrize("exercise_id", per_exercise(EXERCISES))
def test_every_learners_part_the_engine_calls_gives_the_same_tokens_however_written(
    exercise_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 53: every right answer in ``tests/attempts`` of an exercise whose function the engine calls (a
    new exercise included, with no test written for it), in the models whose engine decoding calls it: the
    same tokens on both paths, in a batch and alone (an answer that cannot run in a precision, such as one
    reading ``.weight`` of an int8 layer, fails on the modules' path: the engine must fail too)."""
    uses = engine_calls().get(exercise_id, ())
    if not uses:
        return  # the engine never calls this exercise's function: the promise asks nothing of it
    for answer in _right_answers(exercise_id):
        with monkeypatch.context() as replaced:
            replace_everywhere(EXERCISES[exercise_id], answer.impl, replaced, ENGINE_TOO)
            for kind, seed, precision in uses:
                try:
                    found = differences(MODELS[kind](seed), precision, seed)
                except Exception as error:  # noqa: BLE001 - the learner's answer cannot run here: nor may the engine
                    inputs, _, ways = decoders(in_precision(MODELS[kind](seed), precision), seed)
                    try:
                        ways["greedy"](inputs, "modules")
                    except type(error):  # the modules' path cannot run it either
                        with pytest.raises(type(error)):
                            ways["greedy"](inputs, ENGINE)
                        continue
                    where = f"{answer.name} ({kind}, seed {seed}, {precision})"
                    raise AssertionError(
                        f"{where} fails on the engine only: the engine calls it outside its spec"
                    ) from error
                assert found == [], (answer.name, kind, seed, precision, found)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_the_engine_gives_the_tokens_of_a_learners_rmsnorm_and_swiglu_however_written(precision: str, monkeypatch):
    """Every right answer of ex13_1 (RMSNorm.forward) and ex13_4 (SwiGLU.forward) in
    ``tests/attempts``, in a modern language model: the same tokens on both paths (float32: the
    engine's folded versions; bfloat16 and int8: the learner's own modules)."""
    from transformer_course.rmsnorm import RMSNorm
    from transformer_course.swiglu import SwiGLU

    prompt = torch.randint(4, 150, (2, 5), generator=torch.Generator().manual_seed(3))
    for cls, exercise in ((RMSNorm, "ex13_1"), (SwiGLU, "ex13_4")):
        for answer in _right_answers(exercise):
            monkeypatch.setattr(cls, "forward", answer.impl)
            for family in ("modern", "grouped"):
                model = language_model(family)
                model = model if precision == "float32" else quantize(model, precision)
                try:
                    modules = generate(model, prompt, 20)
                except Exception as error:  # noqa: BLE001 - an answer that reads .weight cannot run int8: nor may the engine
                    with pytest.raises(type(error)):
                        generate(model, prompt, 20, path=ENGINE)
                    continue
                assert torch.equal(modules, generate(model, prompt, 20, path=ENGINE)), (answer.name, family)
            monkeypatch.undo()


@pytest.mark.parametrize("precision", PRECISIONS)
def test_the_engine_gives_the_tokens_of_a_learners_beam_step_written_another_way(precision: str, monkeypatch):
    """Every right answer of ex09_3 in ``tests/attempts`` (one checks that eos_id and pad_id are
    token ids of the vocabulary it is given, one ranks each sentence in a loop) as chapter 09's
    beam_step: beam search gives the learner's modules' tokens and scores on the engine too."""
    import transformer_course.decoding as decoding

    for answer in _right_answers("ex09_3"):
        monkeypatch.setattr(decoding, "beam_step", answer.impl)
        for norm_first in (False, True):
            model = translator(norm_first, tgt_vocab=400)
            model = model if precision == "float32" else quantize(model, precision)
            (modules, m_scores), (engine, e_scores) = (
                beam_search(model, _sources(), 4, 16, n_best=4, path=path) for path in PATHS
            )
            assert torch.equal(modules[:, 0], engine[:, 0]), answer.name
            if precision != "bf16":  # bfloat16's runners-up may tie (tests/test_engine.py)
                assert torch.equal(modules, engine) and torch.allclose(m_scores, e_scores, atol=1e-4, rtol=0)
        monkeypatch.undo()


def test_the_engine_calls_beam_step_within_its_spec(monkeypatch) -> None:
    """What the engine hands ``beam_step``: a (B, K, V') tensor of log-probabilities, with eos_id
    and pad_id two different ids in [0, V') whose columns hold those tokens' own log-probabilities."""
    import transformer_course.decoding as decoding

    seen = []

    def spy(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):  # noqa: ANN001, ANN202
        vocab = log_probs.shape[-1]
        seen.append((vocab, eos_id, pad_id))
        assert 0 <= eos_id < vocab and 0 <= pad_id < vocab and eos_id != pad_id
        assert torch.equal(log_probs.isneginf()[..., pad_id], torch.ones_like(finished)), "<pad> is never next"
        return beam_step(scores, log_probs, finished, lengths, eos_id, pad_id, alpha)

    beam_step = decoding.beam_step
    monkeypatch.setattr(decoding, "beam_step", spy)
    beam_search(translator(False, tgt_vocab=400), _sources(), 4, 10, path=ENGINE)
    assert seen and all(v == 6 and (eos, pad) == (4, 5) for v, eos, pad in seen), seen[:3]  # 4 best, <eos>, <pad>


# -- 5. bad input as on the modules' path ---------------------------------------------------------


def _both_refuse(call, message: str) -> None:  # noqa: ANN001
    errors = []
    for path in PATHS:
        with pytest.raises(ValueError) as caught:
            call(path)
        errors.append(str(caught.value))
    assert errors[0] == errors[1], errors
    assert len(errors[0].splitlines()) == 1 and message in errors[0], errors[0]


BAD_SOURCES = {
    "an id outside the vocabulary": (lambda src: src.index_fill(1, torch.tensor([2]), 500), "src contains id 500"),
    "a negative id": (lambda src: src.index_fill(1, torch.tensor([2]), -1), "src contains id -1"),
    "float ids": (lambda src: src.float(), "src must hold integer token ids"),
    "bool ids": (lambda src: src > 5, "src must hold integer token ids"),
    "a source too long": (lambda src: torch.randint(4, 120, (2, 70)), "src has length 70, longer than max_len=64"),
    "a source of no token": (lambda src: src[:, :0], "src must hold at least one token per row"),
    "one dimension": (lambda src: src[0], "src must have shape (B, S)"),
}


@pytest.mark.parametrize("bad", list(BAD_SOURCES))
def test_a_bad_source_is_refused_alike_on_both_paths(bad: str) -> None:
    model, (make, message) = translator(False), BAD_SOURCES[bad]
    src = make(_sources())
    _both_refuse(lambda path: greedy_decode(model, src, path=path), message)
    _both_refuse(lambda path: beam_search(model, src, 3, path=path), message)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_an_empty_batch_gives_an_empty_result_on_both_paths(precision: str) -> None:
    """No row: no step; the modules and the engine return the same empty tensors."""
    empty = torch.zeros(0, 5, dtype=torch.long)
    model, lm = (
        m if precision == "float32" else quantize(m, precision) for m in (translator(True), language_model("modern"))
    )
    for path in PATHS:
        assert greedy_decode(model, empty, path=path).shape == (0, 0)
        assert greedy_decode(model, empty, 7, path=path).shape == (0, 0)
        assert sample(model, empty, 7, path=path).shape == (0, 0)
        tokens, scores = beam_search(model, empty, 3, 7, n_best=2, path=path)
        assert tokens.shape == (0, 2, 0) and scores.shape == (0, 2)
        assert generate(lm, empty, 4, path=path).shape == (0, 5)


def test_a_model_on_the_meta_device_is_refused_in_one_line() -> None:
    model = translator(False).to("meta")
    _both_refuse(lambda path: greedy_decode(model, _sources(), path=path), "the model's weights are on the meta device")


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("where", ["a weight holds NaN", "a bias holds inf", "logits overflow"])
def test_nan_or_infinite_weights_or_logits_are_refused_naming_the_tensor(where: str, precision: str) -> None:
    """Both paths refuse in the same line, at the first step whose logits are NaN or +inf, naming the
    first tensor that holds NaN or inf (``quantize`` refuses such a tensor before it is rounded)."""
    model, lm = translator(True), language_model("modern")
    with torch.no_grad():
        if where == "a weight holds NaN":
            model.decoder.layers[1].ffn.linear1.weight[3, 4] = float("nan")
            lm.layers[0].ffn.w2.weight[0, 0] = float("nan")
        elif where == "a bias holds inf":
            model.decoder.layers[0].self_attn.w_o.bias[2] = float("inf")
            lm.layers[1].self_attn.w_q.weight[1, 1] = float("-inf")
        else:  # every weight finite, the logits not
            model.decoder.norm.weight.mul_(1e30)
            model.output.weight.mul_(1e10)
            lm.norm.weight.mul_(1e30)
            lm.output.weight.mul_(1e10)
    names = {"a weight holds NaN": ("decoder.layers.1.ffn.linear1.weight holds NaN", "layers.0.ffn.w2.weight holds NaN"),
             "a bias holds inf": ("decoder.layers.0.self_attn.w_o.bias holds inf", "layers.1.self_attn.w_q.weight holds inf"),
             "logits overflow": ("though every weight is finite",) * 2}[where]  # fmt: skip
    if precision != "float32" and where != "logits overflow":
        for m, name in zip((model, lm), names, strict=True):
            with pytest.raises(ValueError, match=f"^{name}: quantize wants finite weights$"):
                quantize(m, precision)
        return
    model, lm = (m if precision == "float32" else quantize(m, precision) for m in (model, lm))
    _both_refuse(lambda path: greedy_decode(model, _sources(), 6, path=path), names[0])
    _both_refuse(lambda path: beam_search(model, _sources(), 3, 6, path=path), names[0])
    prompt = torch.randint(4, 150, (2, 5), generator=torch.Generator().manual_seed(1))
    _both_refuse(lambda path: generate(lm, prompt, 6, path=path), names[1])


@pytest.mark.parametrize("precision", PRECISIONS)
def test_weightless_layer_norms_are_read_as_they_are(precision: str) -> None:
    """Pre-LN with ``LayerNorm(elementwise_affine=False)``: nothing to fold, the same tokens."""
    model = translator(True)
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, nn.LayerNorm):
                setattr(module, name, nn.LayerNorm(child.normalized_shape, elementwise_affine=False))
    model = model if precision == "float32" else quantize(model, precision)
    modules, engine = (greedy_decode(model, _sources(), 12, path=path) for path in PATHS)
    assert torch.equal(modules, engine)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_a_beam_wider_than_the_possible_tokens_gives_the_same_result_on_both_paths(precision: str) -> None:
    """6 tokens, 4 of them possible next tokens, beams of 9 for one token: the empty slots are -inf and all
    padding on both paths."""
    model = translator(False, tgt_vocab=6)
    model = model if precision == "float32" else quantize(model, precision)
    (modules, m_scores), (engine, e_scores) = (beam_search(model, _sources(), 9, 1, n_best=9, path=p) for p in PATHS)
    assert torch.equal(modules, engine) and torch.equal(m_scores.isneginf(), e_scores.isneginf())
    finite = m_scores.isfinite()
    assert torch.allclose(m_scores[finite], e_scores[finite], atol=1e-4, rtol=0)
    assert m_scores.isneginf().any() and not modules[m_scores.isneginf()].ne(0).any()


def test_the_retired_spelling_is_refused_naming_the_new_one() -> None:
    with pytest.raises(ValueError, match=r"^path='engine' is now the engine itself: .* path=ENGINE$"):
        greedy_decode(translator(False), _sources(), path="engine")
    with pytest.raises(ValueError, match="path=ENGINE"):
        generate(language_model("modern"), torch.tensor([[1, 5]]), 2, path="engine")
