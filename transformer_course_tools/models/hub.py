"""Chapter 16's real checkpoints from the Hugging Face Hub: loaded with a bounded, offline-safe
download, and one clear line when that is not possible.

:func:`load_hub` returns a checkpoint's tokenizer and ``transformers`` model; :func:`course_model`
converts the model into the course's own (:mod:`~transformer_course.convert`). The command line
(``translate --hub``, ``generate --hub``) and chapter 16 both use them; a failure is a
:class:`HubError`, whose message is one line naming the model and the reason::

    try:
        tokenizer, hf_model = load_hub("Helsinki-NLP/opus-mt-en-de", "translation")
    except HubError as error:
        print(f"skipped: {error}")

Where the checkpoint comes from, in this order:

1. a local folder (``save_pretrained``'s): read from there, no network;
2. the local Hugging Face cache, when it holds the checkpoint: read from there, no network;
3. otherwise the Hub: one request, bounded by :func:`probe_timeout` seconds, first checks that the
   Hub answers and knows the name, so that no network, ``HF_HUB_OFFLINE=1`` or an unknown name
   fails at once, instead of after ``huggingface_hub``'s retries (about 50 seconds); then
   ``transformers`` downloads only the files it needs. (A network that swallows requests without
   answering also costs ``huggingface_hub``'s own first request, for its user agent: 3 seconds,
   once per process, unless ``HF_HUB_DISABLE_TELEMETRY=1``.)

``transformers`` is imported here only when a checkpoint is loaded (``pip install
"transformer-course[hub]"``).
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch and the converters are imported when a model is converted, not before
    from torch import nn

# what each kind of checkpoint may be: its configuration's model_type → the transformers class
KINDS: dict[str, dict[str, str]] = {
    "translation": {"marian": "MarianMTModel"},
    "causal-lm": {"llama": "LlamaForCausalLM", "gpt2": "GPT2LMHeadModel"},
}
_KIND_NAMES = {"translation": "a Marian translator (MarianMTModel)", "causal-lm": "a Llama or GPT-2 language model"}
CONVERTERS = {"marian": "from_marian", "llama": "from_llama", "gpt2": "from_gpt2"}  # model_type → convert.<name>

PIP_HINT = 'pip install "transformer-course[hub]"'
DEFAULT_PROBE_TIMEOUT_S = 3.0  # the one request that checks the Hub answers; HF_HUB_ETAG_TIMEOUT overrides it


class HubError(ValueError):
    """A checkpoint that cannot be loaded; the message is one line naming it and the reason."""


class MissingPackages(HubError):
    """``transformers`` or ``sentencepiece`` is not installed. A notebook shows the message alone, one
    line, in place of a traceback (IPython prints what ``_render_traceback_`` returns); the cell
    fails, so "Run all" stops there."""

    def _render_traceback_(self) -> list[str]:
        return [str(self)]


def require_packages(what: str) -> None:
    """Raise :class:`MissingPackages` naming ``what`` (the part of a chapter that needs them) unless
    ``transformers`` and ``sentencepiece`` can be imported."""
    missing = [name for name in ("transformers", "sentencepiece") if not _importable(name)]
    if missing:
        raise MissingPackages(f"{what} needs {' and '.join(missing)}, not installed here: {PIP_HINT}")


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a finder that refuses it, or a module set to None in sys.modules
        return False


def probe_timeout() -> float:
    """Seconds the Hub has to answer the first request: ``HF_HUB_ETAG_TIMEOUT`` when set, else 3."""
    value = os.environ.get("HF_HUB_ETAG_TIMEOUT")
    try:
        return float(value) if value else DEFAULT_PROBE_TIMEOUT_S
    except ValueError:
        raise HubError(f"HF_HUB_ETAG_TIMEOUT must be a number of seconds, got {value!r}") from None


def load_hub(name: str, kind: str) -> tuple[object, nn.Module]:
    """(tokenizer, ``transformers`` model) of the checkpoint ``name``: a Hub id such as
    ``"Helsinki-NLP/opus-mt-en-de"`` or a local folder. The model is loaded in float32, whatever
    precision the checkpoint is stored in, so that it computes what the converted model computes.

    ``kind`` is ``"translation"`` (Marian) or ``"causal-lm"`` (Llama family, GPT-2); a checkpoint of
    another family is refused before its weights are downloaded. Raises :class:`HubError`.
    """
    if kind not in KINDS:
        raise HubError(f"kind must be one of {', '.join(map(repr, KINDS))}, got {kind!r}")
    _require_transformers(name)
    folder = _local_folder(name)
    if folder is not None or _cached(name):
        try:
            return _load(name, kind, local_files_only=True)
        except OSError as error:
            if folder is not None:
                raise HubError(f"could not load {name}: {_first_line(error)}") from None
            # only part of it is in the cache: download the rest
    _check_reachable(name)
    try:
        return _load(name, kind, local_files_only=False)
    except OSError as error:
        raise HubError(f"could not download {name}: {_first_line(error)}") from None


def course_model(name: str, hf_model: nn.Module) -> nn.Module:
    """The course's model with ``hf_model``'s weights (the converter of its family), float32, in
    evaluation mode. Raises :class:`HubError` for what the converters do not support."""
    from transformer_course import convert

    model_type = getattr(hf_model.config, "model_type", None)
    if model_type not in CONVERTERS:
        raise HubError(f"{name} is a {model_type} model: the course converts {', '.join(CONVERTERS)} checkpoints")
    try:
        return getattr(convert, CONVERTERS[model_type])(hf_model)
    except ValueError as error:
        raise HubError(f"cannot convert {name}: {_first_line(error)}") from None


# -- where the checkpoint is -----------------------------------------------------------------------


def _require_transformers(name: str) -> None:
    for module in ("transformers", "huggingface_hub"):
        if importlib.util.find_spec(module) is None:
            raise HubError(f"loading {name} needs {module}: {PIP_HINT}")


def _local_folder(name: str) -> Path | None:
    """``name`` as a local folder; None for a Hub id. A name written as a path must be a folder."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    if name.startswith(("/", "./", "../", "~", "\\")) or path.exists():
        problem = "not a folder" if path.exists() else "no such folder"
        raise HubError(f"could not load {name}: {problem} (a checkpoint is a folder or a Hub id like owner/name)")
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(name)
    except HFValidationError:
        raise HubError(f"could not load {name}: not a Hub id (owner/name) nor a folder") from None
    return None


def _cached(name: str) -> bool:
    """Whether the local Hugging Face cache holds the checkpoint's configuration (no network)."""
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(name, "config.json"), str)


def _check_reachable(name: str) -> None:
    """One request, bounded by :func:`probe_timeout`: the Hub answers and knows ``name``."""
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, OfflineModeIsEnabled, RepositoryNotFoundError

    timeout = probe_timeout()
    reason = None
    try:
        HfApi(endpoint=constants.ENDPOINT).model_info(name, timeout=timeout)
    except OfflineModeIsEnabled:
        reason = "offline (HF_HUB_OFFLINE is set) and it is not in the local cache"
    except GatedRepoError:
        reason = "the model is gated: accept its conditions on its Hub page and log in (hf auth login)"
    except RepositoryNotFoundError:
        reason = "no such model on the Hub (or it is private: log in with hf auth login)"
    except HfHubHTTPError as error:
        status = getattr(getattr(error, "response", None), "status_code", "an error")
        reason = f"the Hub ({constants.ENDPOINT}) answered {status}"
    except Exception as error:  # noqa: BLE001 (the HTTP client's own errors: no DNS, refused, timed out …)
        kinds = {kind.__name__ for kind in type(error).__mro__}
        if "timeout" in type(error).__name__.lower():
            reason = f"no network ({constants.ENDPOINT} did not answer within {timeout:g} s)"
        elif kinds & {"ConnectError", "ConnectionError", "NetworkError"}:  # no DNS, no route, refused
            reason = f"no network (cannot reach {constants.ENDPOINT})"
        else:  # a proxy, a certificate …: the client's own words say which
            reason = f"cannot reach {constants.ENDPOINT}: {_first_line(error)}"
    if reason is not None:
        raise HubError(f"could not download {name}: {reason}")


# -- loading ---------------------------------------------------------------------------------------


def _load(name: str, kind: str, local_files_only: bool) -> tuple[object, nn.Module]:
    """Configuration (family checked), then tokenizer and model; OSError when a file is missing."""
    try:
        with _quiet(progress_bars=not local_files_only):
            import transformers
            from huggingface_hub import constants

            # the cache that _cached() looked in (older transformers read their own copy of the setting)
            where = {"local_files_only": local_files_only, "cache_dir": constants.HF_HUB_CACHE}
            config = transformers.AutoConfig.from_pretrained(name, **where)
            model_type = getattr(config, "model_type", None)
            if model_type not in KINDS[kind]:
                raise HubError(f"{name} is a {model_type} model, not {_KIND_NAMES[kind]}")
            tokenizer = transformers.AutoTokenizer.from_pretrained(name, **where)
            model_class = getattr(transformers, KINDS[kind][model_type])
            model = model_class.from_pretrained(name, **where, **_float32(transformers.__version__))
    except ImportError as error:  # transformers without sentencepiece (Marian), or a broken install
        raise HubError(f"loading {name} needs a package that is missing ({_first_line(error)}): {PIP_HINT}") from None
    except (KeyError, ValueError) as error:
        if isinstance(error, HubError):
            raise
        raise HubError(f"could not load {name}: {_first_line(error)}") from None
    return tokenizer, model.eval()


def _float32(version: str) -> dict[str, object]:
    """``from_pretrained``'s argument that loads every tensor in float32, the precision of the
    course's models. LLM checkpoints are usually stored in bfloat16 (SmolLM2 is), and transformers
    5 loads a checkpoint in its stored precision unless told: ``dtype`` since 4.56, ``torch_dtype``
    before."""
    import torch

    major, minor = (int(part) for part in version.split(".")[:2])
    return {"dtype" if (major, minor) >= (4, 56) else "torch_dtype": torch.float32}


@contextmanager
def _quiet(progress_bars: bool) -> Iterator[None]:
    """transformers' warnings off while a checkpoint loads, and its progress bars unless it downloads."""
    from transformers.utils import logging

    verbosity, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    if not progress_bars:
        logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]
