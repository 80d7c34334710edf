"""CTranslate2's model of a course model, made by CTranslate2's own converter
(``ctranslate2.converters.TransformersConverter``) from the exported ``transformers`` folder.

One setting is CTranslate2's guess about Marian that the course's translators do not share:
OPUS-MT's decoder starts from a zero vector, so CTranslate2's Marian loader always starts there.
The course's decoder starts from ``<bos>``'s learned embedding. :class:`CourseConverter` is the
converter with that one setting put back (``start_from_zero_embedding=False``, the decoder
starting from ``<bos>``) and the LayerNorm ε written down; everything else is CTranslate2's.

Decoding: ``Translator.translate_batch`` decodes as the course does with ``beam_size=1`` (its default
is 2) and ``min_decoding_length=0`` (its default 1 forbids ``<eos>`` as the first token, so an
empty translation comes out as some other token). Its beam search takes a finished hypothesis out
of the beam and stops once ``beam_size × patience`` have finished, where the course keeps finished
hypotheses in the beam until all are; and it divides a score by ``length ** length_penalty``, the
course by GNMT's ``((5 + length) / 6) ** alpha``. With ``length_penalty=0`` on both sides (log-probability
alone) and ``patience=2``, they chose the same translation of every number tested.

Precision (``--precision``): ``float32``; ``bf16`` (CTranslate2's ``bfloat16`` weights: the same
rounding as the course's ``quantize(model, "bf16")``); ``int8`` (CTranslate2's ``int8``: one scale
per output row, ±127, as the course's int8, the scale's rounding aside; CTranslate2 also rounds each
layer's input to 8 bits, as the course's fbgemm kernel does on a CPU, each with its own scale).
"""

from __future__ import annotations

from pathlib import Path

from .folders import write_transformers
from .sources import Source

QUANTIZATIONS = {"float32": "float32", "bf16": "bfloat16", "int8": "int8"}  # --precision → CTranslate2's name
TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json"]  # copied beside model.bin, for the text


def _converter_class():
    try:
        from ctranslate2.converters import TransformersConverter
    except ImportError as error:
        raise ImportError("--to ctranslate2 needs the 'ctranslate2' package: pip install ctranslate2") from error

    class CourseConverter(TransformersConverter):
        """CTranslate2's converter; for a translator, the decoder starts from ``start_token``'s embedding."""

        def __init__(self, path: str, start_token: str | None, layer_norm_eps: float, **kwargs) -> None:
            super().__init__(path, **kwargs)
            self.start_token, self.layer_norm_eps = start_token, layer_norm_eps

        def _load(self):
            spec = super()._load()
            if self.start_token is not None:  # the course's decoder reads <bos>'s embedding first, not zeros
                spec.decoder.start_from_zero_embedding = False
                spec.config.decoder_start_token = self.start_token
                spec.config.layer_norm_epsilon = self.layer_norm_eps
            return spec

    return CourseConverter


def write_ctranslate2(source: Source, out: Path, precision: str, scratch: Path) -> Path:
    """Export ``source`` to ``transformers`` in ``scratch`` (a new folder), then convert that folder
    with CTranslate2 into ``out`` (a new folder) with the weights in ``precision``."""
    if precision not in QUANTIZATIONS:
        raise ValueError(f"--precision must be one of {', '.join(QUANTIZATIONS)} for ctranslate2, got {precision}")
    converter_class = _converter_class()
    c = source.model.config
    start = None
    if source.translator:
        if c.bos_id == c.pad_id:  # Marian's own convention (from_marian): CTranslate2's zero start is right
            if source.model.tgt_embed.weight[c.pad_id].abs().max() != 0:
                raise ValueError(
                    "this translator starts from <pad> with a non-zero embedding: CTranslate2 cannot run it"
                )
        else:
            start = source.tokenizer.id_to_token(c.bos_id)
    write_transformers(source, scratch)
    converter = converter_class(str(scratch), start, c.layer_norm_eps, copy_files=TOKENIZER_FILES)
    converter.convert(str(out), quantization=QUANTIZATIONS[precision], force=True)
    return out
