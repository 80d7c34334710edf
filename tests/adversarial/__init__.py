"""Adversarial submissions, written at test time: what a class of students may hand in.

:func:`write_submissions` writes one folder per case into a directory and returns what the
grader should report for each graded exercise. Every case but three starts from a correct package
and breaks ``scaled_dot_product_attention`` (ex03_3) in one way, leaving ``attention_scores``
(ex03_1) correct, so the table also shows that a problem costs only the exercise it is in.
The attacks of a determined student are in :mod:`.attacks`.
"""

from __future__ import annotations

import ast
import shutil
import textwrap
from pathlib import Path

from transformer_course_tools.exercises.edition import stub_source

PACKAGE = "transformer_course"
EXERCISES = ("ex03_1", "ex03_3")
SIGNATURE = "def scaled_dot_product_attention(q, k, v, mask=None, dropout_p=0.0):\n"
CORRECT = """\
scores = apply_mask(attention_scores(q, k), mask)
weights = scores.softmax(dim=-1)
return weights @ v, weights
"""


def _reference_file(course_root: Path) -> Path:
    return course_root.resolve() / PACKAGE / "attention.py"


def _cases(course_root: Path, sandboxed: bool) -> dict[str, tuple[str, dict[str, tuple[str, str]]]]:
    """name → (new body of scaled_dot_product_attention or a special action, expected per exercise).

    An expected value is (status, a piece of the message). In a sandbox the reference answers do
    not exist; without one, reading them is refused and named."""
    ok = ("passed", "cases")
    reference = _reference_file(course_root)
    answers = "the reference answers" if not sandboxed else "FileNotFoundError"
    return {
        "correct": ("keep", {"ex03_1": ok, "ex03_3": ok}),
        "package_only": ("keep", {"ex03_1": ok, "ex03_3": ok}),  # the folder *is* the package
        "nested_archive": ("keep", {"ex03_1": ok, "ex03_3": ok}),  # name/course-main/transformer_course
        "no_package": ("none", {e: ("error", "no transformer_course/ package") for e in EXERCISES}),
        "not_implemented": ("stub", {e: ("not implemented", "not implemented yet") for e in EXERCISES}),
        "syntax_error": (CORRECT.replace("weights\n", "weights)\n", 1), {e: ("error", "SyntaxError") for e in EXERCISES}),
        "exception": ("scale = 1 / (q.shape[0] - q.shape[0])\n" + CORRECT,
                      {"ex03_1": ok, "ex03_3": ("failed", "ZeroDivisionError")}),
        "infinite_loop": ("while True:\n    pass\n", {"ex03_1": ok, "ex03_3": ("timed out", "still running")}),
        "sys_exit": ("import sys\nsys.exit(0)\n", {"ex03_1": ok, "ex03_3": ("error", "sys.exit(0)")}),
        "os_exit": ("import os\nos._exit(0)\n", {"ex03_1": ok, "ex03_3": ("error", "os._exit()")}),
        "huge_output": ("for _ in range(10_000):\n    print('x' * 1000)\n" + CORRECT,
                        {"ex03_1": ok, "ex03_3": ("error", "printed more than")}),
        "nan_output": (CORRECT.replace("return weights @ v", "return float('nan') * (weights @ v)"),
                       {"ex03_1": ok, "ex03_3": ("failed", "NaN")}),
        "wrong_shape": (CORRECT.replace("weights @ v,", "(weights @ v).transpose(-2, -1),"),
                        {"ex03_1": ok, "ex03_3": ("failed", "should have shape")}),
        "mutates_input": ("q /= math.sqrt(q.shape[-1])  # 'saves' a division\n"
                          "scores = apply_mask(q @ k.transpose(-2, -1), mask)\n"
                          "weights = scores.softmax(dim=-1)\nreturn weights @ v, weights\n",
                          {"ex03_1": ok, "ex03_3": ("failed", "modified in place")}),
        "memory_hog": ("import torch\nbig = torch.ones(1024, 1024, 1024)  # 4 GiB\n" + CORRECT,
                       {"ex03_1": ok, "ex03_3": ("error", "memory")}),
        # ex03_1 imports a module of answers by name; ex03_3 loads the instructor's file by path
        "imports_reference": (
            "import importlib.util\n"
            f"spec = importlib.util.spec_from_file_location('answers', {str(reference)!r})\n"
            "answers = importlib.util.module_from_spec(spec)\n"
            "spec.loader.exec_module(answers)\n"
            "return answers.scaled_dot_product_attention(q, k, v, mask)\n",
            {"ex03_1": ("failed", "No module named 'transformer_course_solutions'"),
             "ex03_3": ("reference import" if not sandboxed else "failed", answers)},
        ),
    }  # fmt: skip


def _replace_function(path: Path, name: str, new_source: str) -> None:
    """Replace the top-level function ``name`` of ``path`` by ``new_source``."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    node = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name)
    end = node.end_lineno
    while end < len(lines) and lines[end].strip().startswith("#") and lines[end].startswith("    "):
        end += 1  # a trailing "### END SOLUTION" comment belongs to the function too
    lines[node.lineno - 1 : end] = [new_source]
    path.write_text("".join(lines), encoding="utf-8")


def write_submissions(dest: Path, course_root: Path, sandboxed: bool) -> dict[str, dict[str, tuple[str, str]]]:
    """Write the adversarial submissions into ``dest``; return name → exercise → (status, message part)."""
    package = course_root / PACKAGE
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    expected = {}
    for name, (body, expect) in _cases(course_root, sandboxed).items():
        expected[name] = expect
        folder = dest / name
        if body == "none":
            folder.mkdir(parents=True)
            (folder / "README.txt").write_text("I forgot to attach my code.\n")
            continue
        target = {"package_only": folder, "nested_archive": folder / "course-main" / PACKAGE}.get(
            name, folder / PACKAGE
        )
        shutil.copytree(package, target, ignore=ignore)
        if body == "stub":  # the untouched student edition of chapter 03
            attention = target / "attention.py"
            attention.write_text(stub_source(attention.read_text(), f"{PACKAGE}.attention"), encoding="utf-8")
        elif body != "keep":
            _replace_function(target / "attention.py", "scaled_dot_product_attention",
                              SIGNATURE + textwrap.indent(body, "    "))  # fmt: skip
        if name == "imports_reference":
            _replace_function(target / "attention.py", "attention_scores",
                              "def attention_scores(q, k):\n"
                              "    from transformer_course_solutions.attention import attention_scores as answer\n"
                              "    return answer(q, k)\n")  # fmt: skip
    return expected
