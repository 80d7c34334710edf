"""``translate --hub`` and ``generate --hub``: real checkpoints, without a network.

No test reaches the Hugging Face Hub. The real code path runs on tiny random checkpoints saved
with ``save_pretrained`` in a temporary folder, whose path is the ``--hub`` name: the command's
output must equal the course's own decoding of the converted model and transformers' greedy
``generate``. Offline, unreachable and unknown names must fail in one line, at once.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from transformer_course_tools.cli import main
from transformer_course_tools.models import hub

transformers = pytest.importorskip("transformers")
spm = pytest.importorskip("sentencepiece")

ROOT = Path(__file__).resolve().parent.parent
TEXTS = ["The old man gives the child a ball.", "Some English.", "More sentences here.", "Der Mann gibt einen Ball."]
MISSING = "transformer-course-tests/no-such-model"


# -- tiny checkpoints, saved as the Hub holds them -------------------------------------------------


@pytest.fixture(scope="module")
def marian_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random MarianMTModel and a MarianTokenizer (sentencepiece trained on TEXTS)."""
    folder = tmp_path_factory.mktemp("marian")
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(TEXTS * 4), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(folder / "spm"), vocab_size=60, hard_vocab_limit=False,
        bos_id=-1, eos_id=-1, pad_id=-1, unk_id=0, minloglevel=2,
    )  # fmt: skip
    pieces = spm.SentencePieceProcessor(model_file=str(folder / "spm.model"))
    words = [pieces.id_to_piece(i) for i in range(1, pieces.get_piece_size())]
    vocab = {piece: i for i, piece in enumerate(["</s>", "<unk>", *words, "<pad>"])}  # as OPUS-MT: </s> 0, <pad> last
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    for name in ("source.spm", "target.spm"):
        shutil.copy(folder / "spm.model", folder / name)
    tokenizer = transformers.MarianTokenizer(
        vocab=str(folder / "vocab.json"), source_spm=str(folder / "source.spm"),
        target_spm=str(folder / "target.spm"), source_lang="en", target_lang="de",
    )  # fmt: skip
    config = transformers.MarianConfig(
        vocab_size=len(vocab), d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64,
        pad_token_id=vocab["<pad>"], eos_token_id=0, decoder_start_token_id=vocab["<pad>"],
    )  # fmt: skip
    return _save(folder / "checkpoint", tokenizer, transformers.MarianMTModel(config))


def _byte_level_tokenizer(bos: str | None, eos: str):
    """A byte-level BPE tokenizer trained on TEXTS; with ``bos`` every text starts with it (Llama)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    specials = [bos, eos] if bos else [eos]
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    backend.train_from_iterator(TEXTS, trainer)
    if bos:
        backend.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", special_tokens=[(bos, backend.token_to_id(bos))]
        )
    return transformers.PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=bos or eos, eos_token=eos)


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tokenizer = _byte_level_tokenizer("<s>", "</s>")
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=None,
    )  # fmt: skip
    return _save(tmp_path_factory.mktemp("llama"), tokenizer, transformers.LlamaForCausalLM(config))


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tokenizer = _byte_level_tokenizer(None, "<|endoftext|>")
    eos = tokenizer.eos_token_id
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer), n_embd=16, n_layer=2, n_head=2, n_positions=64, bos_token_id=eos, eos_token_id=eos
    )
    return _save(tmp_path_factory.mktemp("gpt2"), tokenizer, transformers.GPT2LMHeadModel(config))


def _save(folder: Path, tokenizer, model) -> Path:  # noqa: ANN001
    torch.manual_seed(0)
    model.init_weights()  # the same random weights whatever else ran before
    tokenizer.save_pretrained(folder)
    model.save_pretrained(folder)
    return folder


def _run(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


@functools.cache
def _loaded(folder: Path, model_class: str):
    """The checkpoint as transformers loads it (once per module: the tests only read it)."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    return tokenizer, getattr(transformers, model_class).from_pretrained(folder).eval()


# -- the real code path, end to end ----------------------------------------------------------------


def test_translate_hub_prints_the_course_decoding_and_transformers_greedy(
    marian_dir: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from transformer_course import decoding
    from transformer_course.convert import from_marian
    from transformer_course.decoding import greedy_decode

    sources = []  # what the command gives the course's decoding
    monkeypatch.setattr(decoding, "greedy_decode", lambda m, src, *a: sources.append(src) or greedy_decode(m, src, *a))
    status, out, err = _run(["translate", "--hub", str(marian_dir), TEXTS[0], "--max-len", "12"], capsys)
    assert status == 0 and err == "", err
    tokenizer, hf_model = _loaded(marian_dir, "MarianMTModel")
    src = torch.tensor([tokenizer(TEXTS[0])["input_ids"]])  # (1, S)
    assert src[0, -1] == tokenizer.eos_token_id  # Marian's tokenizer ends the source with </s>
    assert len(sources) == 1 and torch.equal(sources[0], src)
    ours = greedy_decode(from_marian(hf_model), src, max_len=12)  # (1, T)
    theirs = hf_model.generate(  # OPUS-MT's configurations forbid <pad> as the course's decoding does
        src, num_beams=1, do_sample=False, max_new_tokens=12, bad_words_ids=[[tokenizer.pad_token_id]],
        forced_eos_token_id=None,
    )[:, 1:]  # fmt: skip  # without the decoder's start token
    expected = tokenizer.decode(ours[0], skip_special_tokens=True)
    assert expected == tokenizer.decode(theirs[0], skip_special_tokens=True)
    assert out == expected + "\n" and expected.strip()


def test_translate_hub_several_sentences_and_beam(marian_dir: Path, capsys) -> None:
    from transformer_course.convert import from_marian
    from transformer_course.decoding import beam_search

    hub_argv = ["translate", "--hub", str(marian_dir), "--max-len", "12"]
    status, out, _ = _run([*hub_argv, TEXTS[1], TEXTS[2]], capsys)
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == f"{TEXTS[1]} →" and lines[2] == f"{TEXTS[2]} →" and len(lines) == 4
    single = [_run([*hub_argv, text], capsys)[1].strip() for text in TEXTS[1:3]]
    assert [lines[1].strip(), lines[3].strip()] == single  # a sentence translates alike alone or in a batch

    status, out, _ = _run([*hub_argv, TEXTS[1], "--beam", "3"], capsys)
    tokenizer, hf_model = _loaded(marian_dir, "MarianMTModel")
    hypotheses, _ = beam_search(from_marian(hf_model), torch.tensor([tokenizer(TEXTS[1])["input_ids"]]), 3, 12)
    assert status == 0 and out.strip() == tokenizer.decode(hypotheses[0, 0], skip_special_tokens=True).strip()


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_generate_hub_prints_the_course_generation_and_transformers_greedy(
    family: str, llama_dir: Path, gpt2_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    from transformer_course.convert import from_gpt2, from_llama
    from transformer_course.lm import generate

    folder, model_class, convert = {
        "llama": (llama_dir, "LlamaForCausalLM", from_llama), "gpt2": (gpt2_dir, "GPT2LMHeadModel", from_gpt2),
    }[family]  # fmt: skip
    status, out, err = _run(["generate", "--hub", str(folder), "The old man", "--max-new-tokens", "12"], capsys)
    assert status == 0 and err == "", err
    tokenizer, hf_model = _loaded(folder, model_class)
    prompt = torch.tensor([tokenizer("The old man")["input_ids"]])  # (1, T)
    assert (prompt[0, 0] == tokenizer.bos_token_id) == (family == "llama")  # Llama's tokenizer adds <s>
    ours = generate(convert(hf_model), prompt, 12)
    never = [i for i in (tokenizer.bos_token_id,) if i != tokenizer.eos_token_id]  # the course never generates <bos>
    theirs = hf_model.generate(
        prompt, do_sample=False, max_new_tokens=12, suppress_tokens=never or None,
        pad_token_id=tokenizer.eos_token_id,
    )  # fmt: skip
    expected = tokenizer.decode(ours[0], skip_special_tokens=True)
    assert expected == tokenizer.decode(theirs[0], skip_special_tokens=True)
    assert out == expected + "\n" and out.startswith("The old man") and len(expected) > len("The old man")


def test_generate_hub_samples_reproducibly_with_a_seed(gpt2_dir: Path, capsys) -> None:
    from transformer_course.convert import from_gpt2
    from transformer_course.lm import generate

    argv = ["generate", "--hub", str(gpt2_dir), "Some", "--max-new-tokens", "10", "--temperature", "1.5"]
    outs = [_run([*argv, "--top-k", "50", "--seed", str(seed)], capsys)[1] for seed in (0, 0, 1)]
    assert outs[0] == outs[1] != outs[2]
    tokenizer, hf_model = _loaded(gpt2_dir, "GPT2LMHeadModel")
    tokens = generate(
        from_gpt2(hf_model), torch.tensor([tokenizer("Some")["input_ids"]]), 10, temperature=1.5, top_k=50,
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    assert outs[0] == tokenizer.decode(tokens[0], skip_special_tokens=True) + "\n"


# -- one line, exit 2, at once ---------------------------------------------------------------------


def _one_line_error(status: int, out: str, err: str, *parts: str) -> None:
    assert status == 2 and out == "", (status, out)
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: "), err
    for part in parts:
        assert part in err, err


def test_offline_fails_at_once_without_importing_transformers() -> None:
    """The real environment variable, in a fresh interpreter, as chapter 16 calls it: no waiting,
    and neither transformers nor torch (seconds to import) imported to find that out."""
    code = textwrap.dedent(f"""
        import sys, time
        start = time.perf_counter()
        from transformer_course_tools.models.hub import HubError, load_hub
        try:
            load_hub("{MISSING}", "translation")
        except HubError as error:
            print(error, file=sys.stderr)
        print(f"{{time.perf_counter() - start:.3f}}", "transformers" in sys.modules, "torch" in sys.modules)
    """)  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    seconds, *imported = result.stdout.split()
    assert (
        result.stderr
        == f"could not download {MISSING}: offline (HF_HUB_OFFLINE is set) and it is not in the local cache\n"
    )
    assert float(seconds) < 3 and imported == ["False", "False"], result.stdout


@pytest.fixture
def silent_hub(monkeypatch: pytest.MonkeyPatch):
    """A Hub address that accepts connections and never answers (a network that hangs)."""
    import huggingface_hub.constants

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    # huggingface_hub's own first request (a registry for its user agent, 3 s, once): not timed here
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_TELEMETRY", True)
    yield
    server.close()


def test_a_hub_that_does_not_answer_fails_within_the_timeout(
    silent_hub: None, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "0.5")
    start = time.perf_counter()
    status, out, err = _run(["generate", "--hub", MISSING, "Some English."], capsys)
    assert time.perf_counter() - start < 2.5  # 0.5 s, and a loaded machine's slack
    _one_line_error(status, out, err, f"could not download {MISSING}: no network (", "did not answer within 0.5 s")


def test_an_unreachable_hub_fails_at_once(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import huggingface_hub.constants

    with socket.socket() as free:  # a port nobody listens on: connection refused
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    start = time.perf_counter()
    status, out, err = _run(["translate", "--hub", MISSING, "Some English."], capsys)
    assert time.perf_counter() - start < 2
    _one_line_error(
        status, out, err, f"could not download {MISSING}: no network (cannot reach http://127.0.0.1:{port})"
    )
    assert "Errno" not in err, err  # a learner's line: the reason, not the socket's error number


def test_an_unknown_name_fails_in_one_line_with_or_without_a_network(capsys) -> None:
    """Here (no network) the Hub cannot be reached; with a network it does not know the name."""
    start = time.perf_counter()
    status, out, err = _run(["generate", "--hub", MISSING, "Some"], capsys)
    assert time.perf_counter() - start < 3 * hub.DEFAULT_PROBE_TIMEOUT_S
    _one_line_error(status, out, err, f"could not download {MISSING}: ")
    assert ("no network" in err) or ("no such model" in err), err


@pytest.mark.parametrize(
    "argv, parts",
    [
        (["translate", "--hub", "./no-such-folder", "Hi."], ["./no-such-folder: no such folder"]),
        (["translate", "--hub", "not a name!", "Hi."], ["not a name!: not a Hub id"]),
        (["generate", "--hub", str(ROOT / "README.md"), "Hi"], ["README.md: not a folder"]),
        (["translate", "--hub", MISSING, "Hi.", "--beam", "0"], ["--beam must be >= 1"]),
        (["translate", "--hub", MISSING, "model.pt", "Hi."], ["either a checkpoint file (model.pt) or --hub"]),
        (["generate", "--hub", MISSING, "  "], ["nothing to continue"]),
        (["generate", "--hub", MISSING, "Hi", "--max-new-tokens", "0"], ["--max-new-tokens must be >= 1"]),
        (["generate", "--hub", MISSING, "Hi", "--top-p", "0"], ["--top-p must be in (0, 1]"]),
        (["generate", "--hub", MISSING, "Hi", "--top-k", "5"], ["--top-k only matter", "--temperature > 0"]),
    ],
    ids=[
        "no folder",
        "bad id",
        "a file",
        "beam 0",
        "checkpoint and hub",
        "empty prompt",
        "0 tokens",
        "top-p 0",
        "top-k greedy",
    ],
)
def test_bad_input_is_one_line_before_any_download(argv: list[str], parts: list[str], capsys) -> None:
    _one_line_error(*_run(argv, capsys), *parts)


def test_checkpoints_of_another_family_are_refused(marian_dir: Path, llama_dir: Path, capsys) -> None:
    status, out, err = _run(["generate", "--hub", str(marian_dir), "Hi"], capsys)
    _one_line_error(status, out, err, f"{marian_dir} is a marian model, not a Llama or GPT-2 language model")
    status, out, err = _run(["translate", "--hub", str(llama_dir), "Hi."], capsys)
    _one_line_error(status, out, err, f"{llama_dir} is a llama model, not a Marian translator")
    status, out, err = _run(["translate", "--hub", str(marian_dir), " "], capsys)
    _one_line_error(status, out, err, "nothing to translate")


def test_generate_refuses_more_tokens_than_the_model_reads(gpt2_dir: Path, capsys) -> None:
    status, out, err = _run(["generate", "--hub", str(gpt2_dir), "Some", "--max-new-tokens", "64"], capsys)
    _one_line_error(status, out, err, "--max-new-tokens 64 does not fit", "reads at most 64")


def test_without_transformers_the_line_says_what_to_install(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    find_spec = hub.importlib.util.find_spec
    monkeypatch.setattr(
        hub.importlib.util, "find_spec", lambda name: None if name == "transformers" else find_spec(name)
    )
    status, out, err = _run(["translate", "--hub", "Helsinki-NLP/opus-mt-en-de", "Hi."], capsys)
    _one_line_error(
        status, out, err, "Helsinki-NLP/opus-mt-en-de needs transformers", 'pip install "transformer-course[hub]"'
    )


def test_load_hub_is_what_chapter_15_calls(llama_dir: Path) -> None:
    tokenizer, hf_model = hub.load_hub(str(llama_dir), "causal-lm")
    assert type(hf_model).__name__ == "LlamaForCausalLM" and tokenizer.eos_token == "</s>"
    assert type(hub.course_model("tiny", hf_model)).__name__ == "DecoderOnlyLM"
    with pytest.raises(hub.HubError, match="kind must be one of"):
        hub.load_hub(str(llama_dir), "speech")


def test_a_checkpoint_stored_in_bf16_is_loaded_in_float32(llama_dir: Path, tmp_path: Path) -> None:
    """LLM checkpoints are stored in bfloat16 (SmolLM2's are), and transformers 5 keeps the stored
    precision unless told: load_hub asks for float32, the precision of the course's models."""
    tokenizer, model = hub.load_hub(str(llama_dir), "causal-lm")
    model.to(torch.bfloat16).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    _, reloaded = hub.load_hub(str(tmp_path), "causal-lm")
    assert {p.dtype for p in reloaded.parameters()} == {torch.float32}
    ids = torch.tensor([[1, 5, 9, 12]])
    with torch.no_grad():
        assert torch.allclose(hub.course_model("tiny", reloaded)(ids), reloaded(ids).logits, atol=1e-5)
    assert hub._float32("4.41.0") == {"torch_dtype": torch.float32}  # the floor: dtype was torch_dtype until 4.56
    assert hub._float32("5.0.0rc1") == {"dtype": torch.float32}


def test_a_cached_checkpoint_is_read_without_the_network(
    marian_dir: Path, silent_hub: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """A checkpoint in the local Hugging Face cache translates while the Hub would hang: no request."""
    import huggingface_hub.constants

    revision = "0" * 40
    repo = tmp_path / "models--tiny--marian"
    shutil.copytree(marian_dir, repo / "snapshots" / revision)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision, encoding="utf-8")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    argv = ["translate", TEXTS[1], "--max-len", "12", "--hub"]
    status, out, err = _run([*argv, "tiny/marian"], capsys)
    assert (status, err) == (0, "") and out == _run([*argv, str(marian_dir)], capsys)[1]


def test_the_source_ends_with_eos_once() -> None:
    """Marian reads ``… </s>``: appended when the tokenizer does not, never twice."""
    from transformer_course_tools.cli.translate import _hub_codec

    class Tokenizer:
        eos_token_id = 0

        def __init__(self, ids: list[int]) -> None:
            self.ids = ids

        def __call__(self, text: str) -> dict:
            return {"input_ids": self.ids}

    assert _hub_codec(Tokenizer([5, 6]))[0](["Hi."]) == [[5, 6, 0]]
    assert _hub_codec(Tokenizer([5, 6, 0]))[0](["Hi."]) == [[5, 6, 0]]
