"""Chapter 08 training pieces: schedule, loss, one step, mixed precision, greedy decoding, the loop."""

from __future__ import annotations

import inspect
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from transformer_course import Transformer, TransformerConfig
from transformer_course.batching import Batch, encode_pairs, make_batch
from transformer_course.data import copy_task
from transformer_course.decoding import greedy_decode
from transformer_course.evaluation import evaluate, evaluate_strata
from transformer_course.loss import label_smoothed_cross_entropy, smoothed_targets
from transformer_course.schedule import make_optimizer, transformer_lr, transformer_scheduler
from transformer_course.step import MixedPrecision, train_step
from transformer_course.training import (
    CPU_PROFILE,
    GPU_PROFILE,
    TOY_PROFILE,
    Evaluation,
    FitOptions,
    History,
    TrainingProfile,
    fit,
    pick_profile,
    prepare_training,
)
from transformer_course_tools.models.runs import run_training

# -- schedule --------------------------------------------------------------------------------


def test_schedule_matches_the_closed_form() -> None:
    d, w = 512, 4000
    assert transformer_lr(1, d, w) == pytest.approx(d**-0.5 * w**-1.5)
    assert transformer_lr(w, d, w) == pytest.approx((d * w) ** -0.5)
    assert transformer_lr(4 * w, d, w) == pytest.approx(d**-0.5 * (4 * w) ** -0.5)
    assert transformer_lr(100, d, w, scale=2.0) == pytest.approx(2 * d**-0.5 * 100 * w**-1.5)
    assert transformer_lr(w, 512, 4000) == pytest.approx(7.0e-4, rel=0.01)  # the paper's peak


def test_schedule_rises_linearly_then_falls_and_peaks_at_warmup() -> None:
    rates = [transformer_lr(s, 128, 300) for s in range(1, 2000)]
    assert max(range(len(rates)), key=rates.__getitem__) + 1 == 300
    assert rates[199] == pytest.approx(2 * rates[99])  # linear warm-up
    assert rates[1199] == pytest.approx(rates[299] / 2)  # 1/sqrt(step): 4× the steps, half the rate
    with pytest.raises(ValueError, match="step"):
        transformer_lr(0, 128, 300)


def test_scheduler_sets_the_rate_of_each_step() -> None:
    model = torch.nn.Linear(3, 3)
    optimizer = make_optimizer(model)
    assert optimizer.defaults["betas"] == (0.9, 0.98) and optimizer.defaults["eps"] == 1e-9
    scheduler = transformer_scheduler(optimizer, 64, 10, scale=3.0)
    for step in range(1, 25):
        assert optimizer.param_groups[0]["lr"] == pytest.approx(transformer_lr(step, 64, 10, 3.0))
        optimizer.step()
        scheduler.step()


# -- loss ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.4])
def test_loss_equals_pytorch_cross_entropy(smoothing: float) -> None:
    logits = torch.randn(3, 7, 11) * 3
    target = torch.randint(1, 11, (3, 7))
    target[0, 4:] = 0
    target[2, 1:] = 0
    want = F.cross_entropy(logits.reshape(-1, 11), target.reshape(-1), label_smoothing=smoothing, ignore_index=0)
    assert torch.allclose(label_smoothed_cross_entropy(logits, target, smoothing, pad_id=0), want, atol=1e-6)


def test_loss_ignores_what_padding_positions_predict() -> None:
    logits = torch.randn(2, 5, 9)
    target = torch.tensor([[3, 4, 2, 0, 0], [5, 2, 0, 0, 0]])
    changed = logits.clone()
    changed[target == 0] = torch.randn(5, 9) * 10
    assert torch.allclose(label_smoothed_cross_entropy(logits, target), label_smoothed_cross_entropy(changed, target))
    all_padding = label_smoothed_cross_entropy(logits, torch.zeros(2, 5, dtype=torch.long))
    assert all_padding.item() == 0.0, "a batch of padding has nothing to learn (and must not give NaN)"


def test_smoothed_targets() -> None:
    q = smoothed_targets(torch.tensor([2, 0]), vocab_size=5, smoothing=0.1)
    assert torch.allclose(q.sum(-1), torch.ones(2))
    assert q[0, 2].item() == pytest.approx(0.9 + 0.02) and q[0, 0].item() == pytest.approx(0.02)


# -- one step --------------------------------------------------------------------------------


def _tiny(vocab: int = 12, **overrides) -> Transformer:
    settings = dict(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, dropout=0.0, max_len=32)
    return Transformer(TransformerConfig(vocab, vocab, **(settings | overrides)))


def _batch() -> Batch:
    task = copy_task(n_train=8)
    return make_batch(encode_pairs(task.train, task.src_vocab, task.tgt_vocab), pad_id=0)


def test_train_step_lowers_the_loss_on_a_batch() -> None:
    model, batch = _tiny(14), _batch()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = [train_step(model, batch, optimizer, smoothing=0.0) for _ in range(50)]
    assert all(loss.dim() == 0 and not loss.requires_grad for loss in losses), "a detached 0-dim tensor per step"
    assert losses[-1] < 0.5 * losses[0]


def test_train_step_clears_old_gradients_and_clips() -> None:
    model, batch = _tiny(14), _batch()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: the weights never change
    train_step(model, batch, optimizer, max_grad_norm=None)
    first = [p.grad.clone() for p in model.parameters()]
    train_step(model, batch, optimizer, max_grad_norm=None)
    assert all(torch.allclose(a, p.grad) for a, p in zip(first, model.parameters(), strict=True))
    train_step(model, batch, optimizer, max_grad_norm=1e-3)
    norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters()]))
    assert norm.item() == pytest.approx(1e-3, rel=1e-3)


def _reference_step(model, batch, optimizer, smoothing: float, max_grad_norm: float) -> float:
    """The step written out by hand, in float32: what ``train_step`` must do without precision."""
    model.train()
    loss = label_smoothed_cross_entropy(model(batch.src, batch.tgt_in), batch.tgt_out, smoothing, batch.pad_id)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(list(model.parameters()), max_norm=max_grad_norm)
    optimizer.step()
    return loss.item()


def _bf16() -> MixedPrecision:
    return MixedPrecision(torch.bfloat16, torch.amp.GradScaler("cpu", enabled=False))


def test_train_step_with_and_without_mixed_precision() -> None:
    """One step function: without precision it is the float32 step written out by hand (bit for bit);
    with bfloat16 autocast (on the CPU here) the forward pass runs in bfloat16, and the loss and the
    update stay close to float32's."""
    batch = _batch()
    models = {name: _tiny(14) for name in ("reference", "float32", "bfloat16")}
    for model in models.values():
        model.load_state_dict(models["reference"].state_dict())
    optimizers = {name: torch.optim.Adam(model.parameters(), lr=3e-3) for name, model in models.items()}
    seen: list[torch.dtype] = []
    models["bfloat16"].output.register_forward_hook(lambda module, inputs, out: seen.append(out.dtype))
    for _ in range(3):
        want = _reference_step(models["reference"], batch, optimizers["reference"], 0.1, 0.5)
        plain = train_step(models["float32"], batch, optimizers["float32"], None, 0.1, 0.5)
        low = train_step(models["bfloat16"], batch, optimizers["bfloat16"], None, 0.1, 0.5, _bf16())
        assert plain.item() == want, "without precision: exactly the float32 step"
        assert low.dtype == torch.float32 and not low.requires_grad, "the loss is computed in float32, detached"
        assert low.item() == pytest.approx(want, rel=2e-2)
    assert seen == [torch.bfloat16] * 3, "the forward pass ran under bfloat16 autocast"
    reference, low = models["reference"].state_dict(), models["bfloat16"].state_dict()
    assert all(torch.equal(models["float32"].state_dict()[k], v) for k, v in reference.items())
    assert all(torch.allclose(low[k], v, atol=2e-2) for k, v in reference.items())
    assert any(not torch.equal(low[k], v) for k, v in reference.items()), "bfloat16 rounds differently"


def test_mixed_precision_step_learns_on_the_cpu_with_bfloat16() -> None:
    model, batch = _tiny(14), _batch()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = [train_step(model, batch, optimizer, precision=_bf16()).item() for _ in range(20)]
    assert all(math.isfinite(x) for x in losses) and losses[-1] < losses[0]
    assert MixedPrecision.for_device("cpu") is None


def test_there_is_one_train_step() -> None:
    from transformer_course import step

    assert [name for name in vars(step) if name.startswith("train_step")] == ["train_step"]


# -- the loop and the assembly -------------------------------------------------------------------


def test_fit_takes_at_most_ten_parameters() -> None:
    """Evaluation, logging and the step's settings travel in small objects, not in a long list."""
    parameters = list(inspect.signature(fit).parameters)
    assert len(parameters) <= 10, parameters
    assert parameters[:5] == ["model", "batches", "optimizer", "scheduler", "steps"]


def test_fit_refuses_bad_settings() -> None:
    with pytest.raises(ValueError, match="log_every"):
        FitOptions(log_every=0)
    with pytest.raises(ValueError, match="max_seconds"):
        FitOptions(max_seconds=-1.0)
    with pytest.raises(ValueError, match="every"):
        Evaluation(lambda model: {}, every=-5)
    task = copy_task(n_train=64, n_eval=8)
    with pytest.raises(ValueError, match="not both"):
        prepare_training(task, _TINY_PROFILE, build=lambda: _tiny(14), resume=object())
    run = prepare_training(task, _TINY_PROFILE)
    with pytest.raises(ValueError, match="start_step"):
        fit(run.model, run.batches, run.optimizer, run.scheduler, 2, start_step=3)


_TINY_PROFILE = TrainingProfile(d_model=16, n_heads=2, d_ff=32, n_layers=1, dropout=0.1, batch_size=16,
                                warmup_steps=4, steps=6, eval_every=0, seed=3)  # fmt: skip


def test_prepare_training_is_the_assembly_written_out() -> None:
    """seed → model → optimizer → scheduler → batches, as a chapter would write it, gives the same run."""
    from transformer_course.batching import batch_stream
    from transformer_course.training import build_model

    task, profile = copy_task(n_train=200, n_eval=8), _TINY_PROFILE
    run = prepare_training(task, profile)
    ours = fit(run.model, run.batches, run.optimizer, run.scheduler, 6, options=replace(run.options, progress=False))

    torch.manual_seed(profile.seed)
    model = build_model(task, profile)
    optimizer = make_optimizer(model)
    scheduler = transformer_scheduler(optimizer, profile.d_model, profile.warmup_steps, profile.lr_scale)
    examples = encode_pairs(task.train, task.src_vocab, task.tgt_vocab)
    batches = batch_stream(examples, profile.batch_size, task.tgt_vocab.pad_id, profile.seed)
    options = FitOptions(profile.smoothing, profile.max_grad_norm, progress=False)
    by_hand = fit(model, batches, optimizer, scheduler, 6, options=options)
    assert ours.losses == by_hand.losses and ours.lrs == by_hand.lrs


def test_prepare_training_takes_a_model_factory_and_a_schedule() -> None:
    task = copy_task(n_train=64, n_eval=8)
    built = []

    def build() -> Transformer:
        built.append(torch.rand(()).item())  # drawn right after the seed
        return _tiny(len(task.src_vocab))

    run = prepare_training(task, _TINY_PROFILE, seed=11, build=build, schedule=lambda count: 0.5 / (count + 1))
    torch.manual_seed(11)
    assert built == [torch.rand(()).item()], "the seed comes first, then the model"
    assert run.optimizer.param_groups[0]["lr"] == 0.5
    fit(run.model, run.batches, run.optimizer, run.scheduler, 3, options=FitOptions(progress=False))
    assert run.optimizer.param_groups[0]["lr"] == pytest.approx(0.5 / 4)


ASSEMBLY_PIECES = ("make_optimizer(model)", "transformer_scheduler(optimizer, profile", "batch_stream(", "LambdaLR(")


def test_the_assembly_is_written_once() -> None:
    """seed → model → optimizer → scheduler → batches is written in prepare_training only: the chapters,
    the command line's runs and the experiments call it."""
    root = Path(__file__).resolve().parents[1]
    users = ["chapters/08_training.py", "chapters/12_real_translation.py", "transformer_course_tools/models/runs.py",
             "transformer_course_tools/notebook/experiments.py"]  # fmt: skip
    for name in users:
        text = (root / name).read_text(encoding="utf-8")
        assert "prepare_training(" in text, f"{name} does not use prepare_training"
        for piece in ASSEMBLY_PIECES:
            assert piece not in text, f"{name} assembles a run itself ({piece})"
    training = (root / "transformer_course" / "training.py").read_text(encoding="utf-8")
    assert training.count("make_optimizer(model)") == 1


def test_fit_evaluates_every_few_steps_and_at_the_end() -> None:
    run = prepare_training(copy_task(n_train=64, n_eval=8), _TINY_PROFILE)
    evaluation = Evaluation(lambda model: {"calls": 1}, every=2)
    history = fit(run.model, run.batches, run.optimizer, run.scheduler, 5, options=FitOptions(log_every=3,
                  progress=False), evaluation=evaluation)  # fmt: skip
    assert [e["step"] for e in history.evals] == [2, 4, 5]
    assert len(history.losses) == 5 and history.steps == [1, 2, 3, 4, 5]


def test_an_evaluation_that_returns_nothing_records_nothing() -> None:
    """A callback that keeps weights every step and measures only now and then (chapter 12)."""
    run = prepare_training(copy_task(n_train=64, n_eval=8), _TINY_PROFILE)
    history, kept = History(), []

    def keep_and_measure(model) -> dict:
        kept.append(history.steps[-1])
        return {"exact_match": 0.0} if history.steps[-1] % 3 == 0 else {}

    fit(run.model, run.batches, run.optimizer, run.scheduler, 7, options=FitOptions(progress=False),
        evaluation=Evaluation(keep_and_measure, every=1), history=history)  # fmt: skip
    assert kept == [1, 2, 3, 4, 5, 6, 7]  # every step, the last one at the end
    assert [e["step"] for e in history.evals] == [3, 6]


def test_profiles() -> None:
    assert pick_profile("cpu") is CPU_PROFILE and pick_profile("cuda") is GPU_PROFILE
    assert pick_profile("cuda", "reverse") is TOY_PROFILE
    assert GPU_PROFILE.d_model > CPU_PROFILE.d_model


# -- decoding and a whole run --------------------------------------------------------------------


def test_greedy_decoding_stops_at_eos_and_pads_after() -> None:
    model = _tiny(14).eval()
    with torch.no_grad():
        model.output.bias.fill_(-10.0)
        model.output.bias[2] = 10.0  # <eos> is always the most probable token
    out = greedy_decode(model, torch.tensor([[4, 5, 6], [7, 0, 0]]), max_len=6)
    assert out.tolist() == [[2], [2]]


def test_chapter_08_decodes_with_its_own_loop_and_chapter_09_owns_the_cached_one() -> None:
    """Evaluation while training (chapter 08) decodes with its plain loop, read_greedily, and does not lean on
    chapter 09's room; the cached greedy decoder is defined once, in decoding.py (test_decoding.py checks
    that the two give the same tokens)."""
    from transformer_course import evaluation

    assert not hasattr(evaluation, "greedy_decode") and "from transformer_course.decoding" not in Path(
        evaluation.__file__
    ).read_text(encoding="utf-8")
    for room in Path(evaluation.__file__).parent.glob("*.py"):
        text = room.read_text(encoding="utf-8")
        assert room.name == "decoding.py" or "def greedy" not in text, f"{room.name} defines a second greedy decoder"


def test_evaluate_strata_agrees_with_evaluate_on_each_stratum() -> None:
    from transformer_course.datasets.numbers import SEEN_STRATA, STRATA, number_pair, numbers_task
    from transformer_course_tools.models.pretrained import load_pretrained

    model = load_pretrained().model
    task = numbers_task(n_train=0, n_valid=30, n_test=30, n_per_stratum=10)
    strata = evaluate_strata(model, task, "test")
    assert list(strata) == list(STRATA)
    for stratum, row in strata.items():
        numbers = task.info["strata"]["test"][stratum]
        assert row["count"] == len(numbers) and row["seen"] == (stratum in SEEN_STRATA)
        assert row["exact_match"] == evaluate(model, [number_pair(n) for n in numbers], task)["exact_match"]
    with pytest.raises(ValueError, match="no strata"):
        evaluate_strata(model, copy_task(n_train=10, n_eval=10))


def test_the_shipped_model_is_right_on_every_stratum() -> None:
    """The committed checkpoint, decoded now (not what its file says about itself): ≥ 99.5% everywhere."""
    from transformer_course.datasets.numbers import numbers_task
    from transformer_course_tools.models.pretrained import load_pretrained

    checkpoint = load_pretrained()
    strata = evaluate_strata(checkpoint.model, numbers_task(), "test")
    assert {name: row["exact_match"] for name, row in strata.items() if row["exact_match"] < 99.5} == {}
    assert strata == checkpoint.extra["test"]["strata"], "the scores recorded in the file are the real ones"


@pytest.mark.parametrize(
    ("name", "recipe"), [("numbers-en-de", "SHIPPED"), ("numbers-en-de-undertrained", "UNDERTRAINED")]
)
def test_the_shipped_models_were_made_by_the_recipe_of_make_checkpoint(name: str, recipe: str) -> None:
    """scripts/make_checkpoint.py re-creates the committed files: their steps, profile and repeats are
    the ones recorded in the checkpoints (so the script cannot drift from what ships). The
    under-trained model is the same run stopped early: only the number of steps differs."""
    import importlib.util
    from dataclasses import replace

    from transformer_course_tools.models.pretrained import load_pretrained

    path = Path(__file__).resolve().parents[1] / "scripts" / "make_checkpoint.py"
    spec = importlib.util.spec_from_file_location("make_checkpoint", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    profile = getattr(script, recipe)
    assert replace(profile, steps=script.SHIPPED.steps) == script.SHIPPED
    checkpoint = load_pretrained(name)
    assert checkpoint.extra["oversampling"] == script.SHIPPED_OVERSAMPLING
    assert checkpoint.step == profile.steps
    assert (
        checkpoint.extra["profile"] == replace(profile, eval_every=checkpoint.extra["profile"]["eval_every"]).to_dict()
    )


def test_a_tiny_model_learns_to_copy_in_seconds() -> None:
    task = copy_task(n_train=4000, n_eval=200, n_symbols=8)
    task.train = [(s[:6], t[:6]) for s, t in task.train]
    task.test = [(s[:6], t[:6]) for s, t in task.test]
    profile = TrainingProfile(
        d_model=32,
        n_heads=2,
        d_ff=64,
        n_layers=1,
        dropout=0.0,
        batch_size=64,
        warmup_steps=50,
        lr_scale=0.4,
        steps=250,
        eval_every=0,
    )
    result = run_training(task, profile, progress=False)
    assert result.metrics["exact_match"] >= 90, result.metrics
    assert result.metrics["steps"] == 250
    assert evaluate(result.model, task.test[:50], task)["chrf"] > 90


def test_strata_scores_of_given_translations_match_evaluate_strata() -> None:
    from transformer_course.datasets.numbers import numbers_task
    from transformer_course.evaluation import strata_scores
    from transformer_course_tools.models.pretrained import load_pretrained
    from transformer_course_tools.notebook.plots import strata_table

    model = load_pretrained().model
    task = numbers_task(n_train=0, n_valid=20, n_test=20, n_per_stratum=5)
    greedy = evaluate_strata(model, task, "test")
    references = [t for _, t in task.test]
    assert strata_scores(task, "test", references) == {
        name: {**row, "exact_match": 100.0} for name, row in greedy.items()
    }, "the references themselves are right everywhere"
    wrong = [["null"]] * len(references)
    assert strata_scores(task, "test", wrong)["0-20"]["exact_match"] == round(100 / 21, 2)  # only "zero" is right
    with pytest.raises(ValueError, match="hypotheses for the"):
        strata_scores(task, "test", references[:-1])
    table = strata_table(greedy, strata_scores(task, "test", wrong), names=["greedy %", "all 'null' %"])
    assert "greedy %" in table.splitlines()[0] and "all 'null' %" in table.splitlines()[0]
    assert "round thousands" in table and table.count("\n") == len(greedy)


def test_evaluate_is_translate_then_score_translations() -> None:
    from transformer_course.datasets.numbers import numbers_task
    from transformer_course.evaluation import score_translations, translate
    from transformer_course_tools.models.pretrained import load_pretrained

    model = load_pretrained().model
    task = numbers_task(n_train=0, n_valid=20, n_test=20, n_per_stratum=5)
    pairs = task.test[-30:]  # long numbers: a sentence of one piece has no 2-, 3- or 4-grams (BLEU 0)
    hypotheses = translate(model, [s for s, _ in pairs], task)
    assert evaluate(model, pairs, task) == score_translations(hypotheses, pairs, task)
    references = [t for _, t in pairs]
    assert score_translations(references, pairs, task) == {"exact_match": 100.0, "bleu": 100.0, "chrf": 100.0}
    three_wrong = [["null"]] * 3 + references[3:]
    scores = score_translations(three_wrong, pairs, task)
    assert scores["exact_match"] == round(100 * 27 / 30, 2) and scores["bleu"] < 100 and scores["chrf"] < 100
    with pytest.raises(ValueError, match="one translation per pair"):
        score_translations(references[:-1], pairs, task)


def test_fit_stops_when_a_finite_list_of_batches_runs_out() -> None:
    model = _tiny(14)
    history = fit(model, iter([_batch()] * 3), make_optimizer(model), None, 10, options=FitOptions(progress=False))
    assert history.steps == [1, 2, 3] and len(history.losses) == 3
