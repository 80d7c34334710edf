"""``export``: a course model out of the course, for the engines people use (chapter 16).

python -m transformer_course export numbers-en-de numbers-hf --to transformers
python -m transformer_course export numbers-en-de numbers-ct2 --to ctranslate2 --precision int8
python -m transformer_course export shakespeare-lm shakespeare.gguf --to gguf
python -m transformer_course export model.pt out --to transformers --force

MODEL is a checkpoint the course wrote (a translator's, chapters 08 and 12, or a language model's,
chapter 14) or the name of a shipped model. ``--to transformers`` writes a folder that
``AutoTokenizer`` and ``AutoModelForSeq2SeqLM`` / ``AutoModelForCausalLM`` load; ``--to ctranslate2``
converts that folder with CTranslate2's own converter; ``--to gguf`` writes one GGUF file for
llama.cpp (language models only). OUT is written whole or not at all: into a temporary folder beside
it, renamed into place at the end; an OUT that exists is replaced only with ``--force``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from . import CLIError

TARGETS = ("transformers", "ctranslate2", "gguf")
PRECISIONS = ("float32", "bf16", "int8")


def _check_out(out: Path, force: bool) -> None:
    if not out.parent.is_dir():
        raise CLIError(f"cannot write {out}: folder {out.parent} does not exist")
    if (out.exists() or out.is_symlink()) and not force:
        raise CLIError(f"{out} exists: pass --force to replace it")


def _quiet_transformers() -> None:
    """transformers' progress bars and advice would bury the one line this command prints."""
    try:
        from transformers.utils import logging
    except ImportError as error:
        raise CLIError("export needs the 'transformers' package: pip install 'transformer-course[hub]'") from error
    logging.set_verbosity_error()
    logging.disable_progress_bar()


def _write(source, target: str, precision: str, scratch: Path) -> tuple[Path, str]:
    """Write the export into ``scratch``: (what to move into place, a description of it)."""
    from transformer_course_tools.models.export.ct2 import write_ctranslate2
    from transformer_course_tools.models.export.folders import write_transformers
    from transformer_course_tools.models.export.gguf_file import write_gguf

    if target == "gguf":
        if source.translator:
            raise CLIError(
                "--to gguf: llama.cpp runs decoder-only language models, and this checkpoint is a translator "
                "(an encoder-decoder): use --to transformers or --to ctranslate2"
            )
        tokens = [source.tokenizer.id_to_token(i) for i in range(source.tokenizer.get_vocab_size())]
        path = write_gguf(source.model, tokens, scratch / "model.gguf", precision)
        return path, "a GGUF file for llama.cpp"
    if target == "ctranslate2":
        path = write_ctranslate2(source, scratch / "out", precision, scratch / "transformers")
        kind = "ctranslate2.Translator" if source.translator else "ctranslate2.Generator"
        return path, f"a CTranslate2 model for {kind} (tokenizer.json beside it)"
    path = write_transformers(source, scratch / "out", precision)
    auto = "AutoModelForSeq2SeqLM" if source.translator else "AutoModelForCausalLM"
    return path, f"a transformers folder for AutoTokenizer and {auto}"


def _replace(new: Path, out: Path, scratch: Path) -> None:
    """Move ``new`` to ``out``; an ``out`` already there is moved aside first and deleted after."""
    old = None
    if out.exists() or out.is_symlink():
        old = scratch / "old"
        out.rename(old)
    try:
        new.rename(out)
    except OSError:
        if old is not None:
            old.rename(out)  # the old OUT stays as it was
        raise


def _export(args: argparse.Namespace) -> int:
    from transformer_course_tools.models.export.sources import load_source

    out = Path(args.out)
    _check_out(out, args.force)
    if args.to == "transformers" and args.precision == "int8":
        raise CLIError(
            "--precision int8: transformers' layers hold float weights; int8 is the engines' "
            "(--to ctranslate2 or --to gguf)"
        )
    if args.to != "gguf":
        _quiet_transformers()
    source = load_source(args.model)
    scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))  # beside OUT: a rename, not a copy
    try:
        new, what = _write(source, args.to, args.precision, scratch)
        _replace(new, out, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"wrote {out}: {what}, {args.precision}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "export",
        usage="%(prog)s MODEL OUT --to {transformers,ctranslate2,gguf} [--precision P] [--force]",
        help="export a course model to transformers, CTranslate2 or llama.cpp (GGUF)",
        description="Write a course model (a checkpoint file, or a shipped name: numbers-en-de, "
        "numbers-en-de-undertrained, shakespeare-lm) for another engine: a transformers folder (with its "
        "tokenizer), a CTranslate2 model (converted by CTranslate2 from that folder), or a GGUF file for "
        "llama.cpp (language models). Chapter 16.",
    )
    parser.add_argument("model", metavar="MODEL", help="a course checkpoint (.pt) or the name of a shipped model")
    parser.add_argument("out", metavar="OUT", help="the folder (or, with --to gguf, the file) to write")
    parser.add_argument("--to", required=True, choices=TARGETS, help="the engine to export for")
    parser.add_argument(
        "--precision",
        default="float32",
        choices=PRECISIONS,
        help="the weights' precision: float32 (default), bf16, or int8 (CTranslate2's int8, llama.cpp's q8_0)",
    )
    parser.add_argument("--force", action="store_true", help="replace OUT if it exists")
    parser.set_defaults(run=_export)
