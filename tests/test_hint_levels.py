"""Hint levels an instructor sets (README: "Hint levels"): "full" (the course as it was), "nudge"
(the idea and the paper's section, no code) and "none" (only what to write), in the student
edition's stubs, in ``check`` (where a learner may ask for more) and in ``grade``'s feedback."""

from __future__ import annotations

import ast
import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest
import torch

from transformer_course import attention
from transformer_course_tools.cli import main
from transformer_course_tools.course import PACKAGE
from transformer_course_tools.exercises import edition, hints
from transformer_course_tools.exercises.checks import EXERCISES, CheckFailure, check, get_exercise, run_check
from transformer_course_tools.exercises.checks._tools import split_fix
from transformer_course_tools.exercises.checks.registry import load_checks
from transformer_course_tools.exercises.checks.runner import _failure_text
from transformer_course_tools.grading import load_config

ROOT = Path(__file__).resolve().parent.parent
CODE = re.compile(r"\w\(|\.[A-Za-z_]|@|\[|==|\*\*|//|torch|[a-z]+_[a-z]+")  # calls, attributes, operators, names
# ex03_3, ex09_3, ex13_5: the code each full hint spells out, which the lower levels must not show
SOLUTION_TOKENS = {
    "ex03_3": ("softmax(", "masked_fill", "apply_mask", "attention_scores", "weights @ v"),
    "ex09_3": ("topk", "torch.where", "gnmt_length_penalty", "index // V", "scores[..., None]"),
    "ex13_5": ("torch.maximum", "exp(", "new_top", "weights @ values", "total·rescale"),
}


def _unscaled(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """ex03_1 with a known mistake: the scores are not divided by sqrt(d_k)."""
    return q @ k.transpose(-2, -1)


def _every_exercise() -> list:
    """Each exercise's id, marked with it (``pytest -m ex03_2``, as ``make check-changed`` runs them)."""
    return [pytest.param(i, marks=getattr(pytest.mark, i), id=i) for i in sorted(load_checks())]


@pytest.mark.parametrize("exercise_id", _every_exercise())
def test_every_exercise_has_a_nudge_without_code(exercise_id: str) -> None:
    ex = get_exercise(exercise_id)
    assert ex.nudge, f"{ex.id}: no 'Nudge:' paragraph in its check's docstring"
    assert not CODE.search(ex.nudge), f"{ex.id}: the nudge shows code: {CODE.search(ex.nudge).group()!r}"


@pytest.mark.parametrize("exercise_id", sorted(SOLUTION_TOKENS))
def test_the_stub_says_less_at_each_level(exercise_id: str) -> None:
    ex = get_exercise(exercise_id)
    full, nudge, none = (ex.stub_message(hints=level) for level in edition.HINT_LEVELS)
    assert full == ex.stub_message() and full.endswith(f"Hint: {ex.hint}")  # "full" is today's text
    assert any(token in full for token in SOLUTION_TOKENS[exercise_id])
    for lower in (nudge, none):
        assert lower.startswith(f"{ex.id} ({ex.qualname}) is not implemented yet: edit {ex.file}. Hint: ")
        assert not [token for token in SOLUTION_TOKENS[exercise_id] if token in lower], lower
    assert "§" in nudge and ex.nudge in nudge
    assert none.endswith(f"Hint: write {ex.title} (its docstring says what it takes and returns).")


def test_stub_source_writes_the_level_it_is_given() -> None:
    source = (ROOT / PACKAGE / "attention.py").read_text()
    ex = get_exercise("ex03_3")
    for level in edition.HINT_LEVELS:
        stubbed = edition.stub_source(source, f"{PACKAGE}.attention", level)
        assert f"raise NotImplementedError({ex.stub_message(hints=level)!r})" in stubbed
    assert edition.stub_source(source, f"{PACKAGE}.attention") == edition.stub_source(
        source, f"{PACKAGE}.attention", "full"
    )


def test_the_student_edition_records_its_level(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "course" / PACKAGE
    shutil.copytree(ROOT / PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__", "tools"))
    edition.stub_package(package, "nudge")
    text = (package / "attention.py").read_text()
    assert get_exercise("ex03_3").nudge in text and "weights @ v, weights)." not in text
    (tmp_path / "course" / edition.STUDENT_MARK).write_text(edition.edition_mark("nudge"))
    assert edition.edition_hints(tmp_path / "course") == "nudge" and edition.edition_hints(ROOT) == "full"
    assert json.loads(edition.edition_mark())["hints"] == "full"
    assert 'hints="full"' in edition._banner("nudge")
    assert edition._banner("full") == edition._BANNER
    made = {}
    monkeypatch.setattr(edition, "build_student_edition", lambda root, out, **kw: made.update(kw) or out)
    assert main(["student-edition", str(tmp_path / "out"), "--hints", "none"]) == 0
    assert made == {"hints": "none", "worked_answers": True}
    assert main(["student-edition", str(tmp_path / "out"), "--no-worked-answers"]) == 0
    assert made == {"hints": "full", "worked_answers": False}
    with pytest.raises(ValueError, match="hints = 'some' must be one of full, nudge, none"):
        edition.check_level("some")


def test_check_shows_the_fix_at_full_only(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    from transformer_course_tools.exercises.checks import runner

    monkeypatch.setattr(attention, "attention_scores", _unscaled)
    monkeypatch.setattr(runner, "_said_which", True)  # which code is checked: said once per kernel, tested elsewhere
    shown = {}
    for level in (None, *edition.HINT_LEVELS):
        check("ex03_1", hints=level)
        shown[level] = capsys.readouterr().out
    assert shown[None] == shown["full"]  # the complete course's default: the output it always printed
    assert "the scores are not scaled: divide by sqrt(d_k) = 2" in shown["full"] and "More help" not in shown["full"]
    for level in ("nudge", "none"):
        assert "the scores are not scaled" in shown[level] and "divide" not in shown[level]
        assert shown[level].endswith('More help: check("ex03_1", hints="full") shows the whole hint and the fix.\n')
    assert "the idea: each query is compared with each key" in shown["nudge"] and "(paper §3.2.1)" in shown["nudge"]
    assert "the idea" not in shown["none"]
    with pytest.raises(ValueError, match="hints = 'all' must be one of full, nudge, none"):
        check("ex03_1", hints="all")


def test_check_defaults_to_the_editions_level_and_asks_for_more(monkeypatch: pytest.MonkeyPatch) -> None:
    ex = get_exercise("ex03_3")

    def stub(*args: object) -> None:  # a stub written at level "none"
        raise NotImplementedError(ex.stub_message(hints="none"))

    monkeypatch.setattr(hints, "edition_hints", lambda root=None: "none")
    assert run_check("ex03_1", _unscaled).message.endswith("the scores are not scaled (1 of 5 cases passed)")
    assert run_check("ex03_3", stub).message == ex.stub_message(hints="none")
    assert run_check("ex03_3", stub, hints="full").message == ex.stub_message()  # the learner asked for more
    assert run_check("ex03_3", stub, hints="nudge").message == ex.stub_message(hints="nudge")


def test_grade_writes_the_feedback_at_the_configured_level(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    package = tmp_path / "subs" / "ada" / PACKAGE
    shutil.copytree(ROOT / PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__", "tools"))
    with open(package / "attention.py", "a") as handle:
        handle.write("\n\ndef attention_scores(q, k):  # not scaled\n    return q @ k.transpose(-2, -1)\n")
    config = tmp_path / "grading.toml"
    config.write_text('[grading]\nhints = "none"\ntimeout_s = 120\nmemory_mb = 3072\n')
    out = tmp_path / "grades" / "report.csv"
    args = ["grade", str(tmp_path / "subs"), "--out", str(out), "--exercises", "ex03_1", "--no-progress"]
    assert main([*args, "--config", str(config)]) == 0
    message = json.loads(out.with_suffix(".json").read_text())["students"][0]["results"]["ex03_1"]["message"]
    assert message.endswith("the scores are not scaled (1 of 5 cases passed)"), message
    feedback = (out.parent / "feedback" / "ada.md").read_text()
    assert "the scores are not scaled" in feedback and "divide" not in feedback
    config.write_text('[grading]\nhints = "some"\n')
    assert main([*args, "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "grading setting hints = 'some' must be one of full, nudge, none" in err, err
    with pytest.raises(ValueError, match="hints must be a string"):
        config.write_text("[grading]\nhints = 1\n")
        load_config(config)
    assert load_config(ROOT / "grading.toml").hints == "full"


def test_a_failure_without_a_brief_is_cut_before_its_fix() -> None:
    ex, label = get_exercise("ex03_3"), "q (2, 3, 4), mask (2, 3, 5)"
    error = CheckFailure(f"{label}: weights are non-zero where mask is False (polarity: True = may attend); mask them")
    assert _failure_text(ex, label, error, "full") == str(error)
    assert _failure_text(ex, label, error, "none") == f"{label}: weights are non-zero where mask is False " + (
        "(polarity: True = may attend)"
    )
    assert split_fix("a (b: c); d: e") == ("a (b: c)", "d: e") and split_fix("no fix here") == ("no fix here", "")

    def raising(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        raise ValueError("no keys: none at all")

    assert "raised ValueError: no keys: none at all" in run_check("ex03_1", raising, hints="none").message


def test_what_a_common_pytorch_error_means_is_a_fix_shown_at_full_only() -> None:
    def transposed_wrong(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return q @ k.transpose(0, 1)  # the batch axis swapped with the keys

    full, none = (run_check("ex03_1", transposed_wrong, hints=level).message for level in ("full", "none"))
    assert "raised RuntimeError" in full and "do not broadcast" in full, full
    assert "raised RuntimeError" in none and "do not broadcast" not in none, none


def test_check_without_ids_prints_status_and_file_not_the_hints(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture) -> None:  # fmt: skip
    """The overview a learner starts with gives no exercise away: one line per exercise, its status
    and the file to edit; the stubs' hints (recipes at level "full") only for an exercise asked for."""
    from transformer_course_tools.exercises import checks
    from transformer_course_tools.exercises.checks.runner import CheckResult

    stubbed = [CheckResult(i, ex.title, "not implemented", ex.stub_message()) for i, ex in sorted(EXERCISES.items())]
    monkeypatch.setattr(checks, "run_checks", lambda ids=None, timeout=None, hints=None: [r for r in stubbed
                        if ids is None or r.id in ids])  # fmt: skip
    assert main(["check"]) == 1
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] and line.split()[0] in EXERCISES]
    assert rows == [[i, "not", "implemented", ex.file] for i, ex in sorted(EXERCISES.items())], out
    assert "Hint" not in out and "check EXERCISE" in out.splitlines()[-1]
    main(["check", "ex03_3"])
    assert get_exercise("ex03_3").hint in capsys.readouterr().out  # asked for by id: the whole message


def _given(node: ast.expr, hint: str, words: set[str]) -> bool:
    """``node`` (an expression of a worked answer) is spelled out by ``hint``: its code is there (spaces and
    brackets aside), or it is a name or constant the hint names, or every operand of it is given."""
    if re.sub(r"[\s()]+", "", ast.unparse(node)) in re.sub(r"[\s()]+", "", hint):
        return True
    if isinstance(node, ast.Name | ast.Constant):
        return str(getattr(node, "id", getattr(node, "value", ""))) in words
    operands = [child for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr)]
    compound = isinstance(node, ast.Tuple | ast.BinOp | ast.BoolOp | ast.Compare | ast.UnaryOp)
    return compound and bool(operands) and all(_given(child, hint, words) for child in operands)


@pytest.mark.complete_edition  # it reads the worked answers
@pytest.mark.parametrize("exercise_id", _every_exercise())
def test_a_stubs_full_hint_is_a_recipe_not_the_answers_code(exercise_id: str) -> None:
    """Issue 49: the full hints of ex08_1 and ex08_2 were their answers. A hint that spells out every
    statement of the worked answer (its code, or all its operands) gives the answer away."""
    from transformer_course_tools.exercises.regions import region_targets

    ex = get_exercise(exercise_id)
    source = (ROOT / ex.file).read_text(encoding="utf-8")
    begin, end = next((b, e) for b, e, target in region_targets(source, ex.module) if target == ex.target)
    answer = ast.parse(textwrap.dedent("\n".join(source.splitlines()[begin + 1 : end])))
    values = [node.value for node in ast.walk(answer) if isinstance(node, ast.Return | ast.Assign | ast.AugAssign)
              and node.value is not None]  # fmt: skip
    words = set(re.findall(r"[\w.]+", ex.hint))
    given_away = bool(values) and all(_given(value, ex.hint, words) for value in values)
    assert not given_away, f"{ex.id}'s full hint spells out its answer: {ex.hint}"
