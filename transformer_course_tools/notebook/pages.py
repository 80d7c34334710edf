"""What a chapter prints for its reader: the model's code on one page, a run's settings in one sentence.

* :func:`code_page` prints functions of the package as a reader wants them, top to bottom: each
  function's own lines, without its docstring and the checks of its arguments (they guard the edge,
  they are not the computation), its signature on one line, and without the formatter's
  ``# fmt: skip`` markers (they speak to a tool, not to the reader);
* :func:`code_block` shows that page as a highlighted Python block in a notebook;
* :func:`functions_called` lists the functions a call runs, and :func:`check_page` uses it to say in
  one line that the page a chapter printed is the code that runs;
* :func:`run_settings` says in one sentence what a training profile trains, and how.

In the student edition the learner's own code is printed: a chapter cell that prints the package's
exercise functions is tagged ``shows-solutions``, and the edition drops its committed output
(:data:`transformer_course_tools.exercises.edition.SHOWS_SOLUTIONS`).
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path
from types import CodeType

_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
_FORMATTER = re.compile(r"\s*# fmt: skip$")  # a comment for ruff format, not for the reader


def _is_check(node: ast.stmt) -> bool:
    """An argument check: ``_check_x(...)`` / ``check_x(...)``, or ``if …: raise …``."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        name = getattr(func, "attr", getattr(func, "id", ""))
        return name.startswith(("_check", "check_"))
    return isinstance(node, ast.If) and all(isinstance(s, ast.Raise) for s in node.body) and not node.orelse


def _signature(node: ast.FunctionDef) -> str:
    """``def name(args):`` on one line, without annotations."""
    args = ast.parse(ast.unparse(node.args).join(("def f(", "): pass"))).body[0].args  # a copy
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
        if arg is not None:
            arg.annotation = None
    return f"def {node.name}({ast.unparse(args)}):"


def function_text(function: Callable) -> str:
    """``function``'s source as :func:`code_page` shows it (see the module's docstring)."""
    source = textwrap.dedent(inspect.getsource(function))
    lines = source.splitlines()
    node = ast.parse(source).body[0]
    if not isinstance(node, ast.FunctionDef):
        raise TypeError(f"{function!r} is not a function")
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    dropped: set[int] = set()  # 0-based line numbers
    for stmt in body:
        if _is_check(stmt):
            dropped.update(range(stmt.lineno - 1, stmt.end_lineno))
            above = stmt.lineno - 2  # a comment that introduces the check goes with it
            while above >= 0 and lines[above].strip().startswith("#") and not lines[above].strip().startswith("###"):
                dropped.add(above)
                above -= 1
    kept = [
        _FORMATTER.sub("", line)
        for i, line in enumerate(lines[body[0].lineno - 1 : node.end_lineno], start=body[0].lineno - 1)
        if i not in dropped and line.strip() not in _MARKERS
    ]
    # the first body line may follow a dropped comment: start at the first line that was kept
    return "\n".join([_signature(node), *kept])


def code_page(functions: Iterable[Callable], width: int = 100) -> str:
    """The functions' code, one after the other, each under a rule naming it and its file."""
    parts = []
    for function in functions:
        where = Path(inspect.getsourcefile(function)).name
        title = f"# {function.__qualname__}  ({where}) "
        parts.append(title + "─" * max(width - len(title), 3))
        parts.append(function_text(function))
        parts.append("")
    return "\n".join(parts).rstrip() + "\n"


def code_block(functions: Iterable[Callable]):
    """:func:`code_page` as a Markdown Python block: highlighted in JupyterLab and in the web edition."""
    from IPython.display import Markdown

    return Markdown(f"```python\n{code_page(functions)}```")


def check_page(functions: list[Callable], run: Callable[[], object]) -> str:
    """One line saying that the page is the code that runs, or an AssertionError naming what is not.

    ``run()`` computes the model's output. It runs twice: once with every attention on the teaching
    path (``fast=False``: equation (1) as the page prints it), recording the functions it enters, and
    once as it is (PyTorch's fused kernel). Every function of the page must have run, and the two
    outputs must agree."""
    import functools
    from unittest import mock

    import torch

    from transformer_course.multihead import MultiHeadAttention

    teaching = functools.partialmethod(MultiHeadAttention.forward, fast=False)
    with torch.no_grad():
        with mock.patch.object(MultiHeadAttention, "forward", teaching):
            ran = functions_called(run)
            printed = run()
        fused = run()
    not_run = [f.__qualname__ for f in functions if f.__code__ not in ran]
    assert not not_run, f"on the page but never run: {', '.join(not_run)}"
    assert torch.allclose(printed, fused, atol=1e-5), "the teaching path and the fused kernel disagree"
    return (f"✓ the page is the code that runs: its {len(functions)} functions all ran, and the printed "
            "attention gives the same output as the fused kernel (within 1e-5)")  # fmt: skip


def functions_called(run: Callable[[], object], package: str = "transformer_course") -> dict[CodeType, str]:
    """The functions of ``package`` that ``run()`` entered: their code objects, in the order first
    entered, each with its name (``module.qualname``)."""
    seen: dict[CodeType, str] = {}

    def profile(frame, event, arg) -> None:
        if event == "call" and frame.f_code not in seen:
            module = frame.f_globals.get("__name__", "")
            if module == package or module.startswith(package + "."):
                name = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)  # co_qualname: Python 3.11+
                seen[frame.f_code] = f"{module}.{name}"

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(previous)
    return seen


def run_settings(profile, device: object = "cpu", precision: object = None, where: str = "On this machine") -> str:
    """One sentence: the model a training profile builds and how it trains it (a
    :class:`~transformer_course.training.TrainingProfile` or chapter 12's ``SentenceProfile``).
    ``precision``: None (float32), a :class:`~transformer_course.step.MixedPrecision` or its dtype."""
    p = profile
    layers = f"{p.n_layers} encoder and {p.n_layers} decoder layer{'s' if p.n_layers > 1 else ''}"
    model = f"d_model = {p.d_model}, {p.n_heads} heads, {layers}, d_ff = {p.d_ff}"
    model += f", dropout {p.dropout:g}" if p.dropout else ", no dropout"
    if hasattr(p, "max_tokens"):
        batches = f"{p.steps:,} steps of batches of {p.max_tokens:,} tokens"
        words = f" on {p.n_train:,} sentence pairs, with {p.vocab_size:,} subword tokens shared by both languages"
    else:
        batches, words = f"{p.steps:,} steps of {p.batch_size} sentences", ""
    scale = "the paper's" if p.lr_scale == 1 else f"{p.lr_scale:g} × the paper's"
    clip = f", gradients clipped to norm {p.max_grad_norm:g}" if p.max_grad_norm else ""
    dtype = getattr(precision, "dtype", precision)
    arithmetic = "float32" if dtype is None else f"mixed precision, {str(dtype).removeprefix('torch.')}"
    kind = getattr(device, "type", str(device))
    return (f"{where} ({kind}, {arithmetic}): a Transformer with {model}, trained for {batches}{words}; "
            f"learning rate: {scale} schedule with {p.warmup_steps:,} warm-up steps; label smoothing "
            f"{p.smoothing:g}{clip}; seed {p.seed}.")  # fmt: skip
