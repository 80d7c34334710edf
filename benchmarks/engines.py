"""The course's inference engine against the engines people pick instead: CTranslate2 and llama.cpp.

    pip install -e ".[benchmark]"            # ctranslate2, llama-cpp-python, gguf (not in `make test`)
    python -m benchmarks.engines             # both shapes, every engine (about 15 minutes)
    python -m benchmarks.engines --only smollm --rounds 3
    python -m benchmarks.engines --quick     # tiny shapes, seconds (tests/test_benchmarks.py)
    python -m benchmarks.engines --kernels   # the engine's choices: every product in each kernel and layout
    python -m benchmarks.engines --learners  # the shipped models exported (chapter 16's route), in CTranslate2 and llama.cpp

The protocol:

* **The same random weights in every engine.** A ``MarianMTModel`` of opus-mt-en-de's shape and a
  ``LlamaForCausalLM`` of SmolLM2-135M's (30 layers, D 576, 9 query heads sharing 3 key/value
  heads, vocabulary 49,152, tied embedding) are drawn here, no download. The course reads them with
  ``from_marian`` / ``from_llama``; CTranslate2 converts the same ``transformers`` model with its own
  converter; llama.cpp reads a GGUF file written here from the course's model (its "normal" rotary
  mode turns the neighbouring pairs (2i, 2i+1) the course turns, so W^Q and W^K go in as they are).
  ``<eos>`` is switched off (a logit bias of -1e4, or a zero output row) so every run makes N tokens.
* **The tokens checked identical before timing**, in float32, against ``transformers``; in int8
  each engine rounds in its own way, so the share of tokens that agree with float32 is shown.
* **One thread, each engine in its own process**, started once; the parent asks each process in
  turn for one run (a warm-up run first, untimed; then interleaved rounds, the order rotating), and each reports its CPU time
  (``time.process_time``: other programs' load does not count). Medians and minima.
* **The machine named**, with the one-thread read bandwidth measured in the same run (a sum over
  1 GiB of float32, the best of five), and for batch 1 the weight bytes a token reads divided by
  the time it takes: the share of that bandwidth the engine reaches.

Results go to the terminal and, with ``--record``, to ``benchmarks/results.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from benchmarks.hub import OPUS_MT_EN_DE
from transformer_course_tools.models import published

ROOT = Path(__file__).resolve().parent.parent
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "CT2_INTER_THREADS": "1",
              "CT2_INTRA_THREADS": "1"}  # fmt: skip

MARIAN = OPUS_MT_EN_DE  # opus-mt-en-de's shape
SMOLLM = published.config(published.SMOLLM2_135M)  # SmolLM2-135M's shape, its published config.json
QUICK = {
    "marian": MARIAN | dict(vocab_size=501, decoder_vocab_size=501, d_model=64, encoder_layers=2, decoder_layers=2,
                            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                            decoder_ffn_dim=128, pad_token_id=500, decoder_start_token_id=500),
    "smollm": SMOLLM | dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2),
}  # fmt: skip
SRC_LEN, TGT_LEN = 24, 48  # the translator: source tokens, tokens made
PROMPT_LEN, NEW_TOKENS = 16, 64  # the language model


# -- the models, drawn once and saved where every engine's process reads them --------------------


def draw_every_tensor(model: torch.nn.Module, seed: int = 0) -> None:
    """Every tensor random (norm gains around 1, biases small), as chapter 15's proofs draw them."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            noise = torch.randn(p.shape, generator=generator)
            if p.dim() > 1:
                p.copy_(noise * (0.5 if "embed" in name else 1.0) / p.shape[-1] ** 0.5)
            else:
                p.copy_(("norm" in name and "weight" in name) + 0.1 * noise)


def make_marian(shape: dict, folder: Path) -> None:
    from transformers import MarianConfig, MarianMTModel

    torch.manual_seed(0)
    model = MarianMTModel(MarianConfig(**shape)).eval()
    draw_every_tensor(model)
    with torch.no_grad():
        model.model.shared.weight[shape["pad_token_id"]] = 0.0  # the decoder starts from <pad>'s zero vector
        model.final_logits_bias[0, shape["eos_token_id"]] = -1e4  # never <eos>: every run makes N tokens
    model.generation_config.forced_eos_token_id = None
    model.save_pretrained(folder)


def make_smollm(shape: dict, folder: Path) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**shape)).eval()
    draw_every_tensor(model)
    with torch.no_grad():
        model.model.embed_tokens.weight[shape["eos_token_id"]] = 0.0  # <eos>'s logit 0: never the largest
    model.save_pretrained(folder)
    write_gguf(model, folder / "model-f32.gguf")


def write_gguf(model: torch.nn.Module, path: Path) -> None:
    """The course's copy of ``model`` as a GGUF file for llama.cpp (no vocabulary: ids go in as they are)."""
    import gguf

    from transformer_course import from_llama

    ours = from_llama(model)
    c = ours.config
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(c.max_len)
    writer.add_embedding_length(c.d_model)
    writer.add_block_count(c.n_layers)
    writer.add_feed_forward_length(c.d_ff)
    writer.add_head_count(c.n_heads)
    writer.add_head_count_kv(c.n_kv_heads)
    writer.add_rope_freq_base(c.rope_base)
    writer.add_rope_dimension_count(c.d_model // c.n_heads)
    writer.add_layer_norm_rms_eps(c.layer_norm_eps)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("none")
    writer.add_vocab_size(c.vocab_size)
    writer.add_bos_token_id(c.bos_id)
    writer.add_eos_token_id(c.eos_id)

    def put(name: str, tensor: torch.Tensor) -> None:
        writer.add_tensor(name, tensor.detach().float().contiguous().numpy())

    put("token_embd.weight", ours.embed.embedding.weight)
    for i, layer in enumerate(ours.layers):
        a, f = layer.self_attn, layer.ffn
        for name, tensor in {
            "attn_norm": layer.norm1.weight, "attn_q": a.w_q.weight, "attn_k": a.w_k.weight,
            "attn_v": a.w_v.weight, "attn_output": a.w_o.weight, "ffn_norm": layer.norm2.weight,
            "ffn_gate": f.w1.weight, "ffn_up": f.w3.weight, "ffn_down": f.w2.weight,
        }.items():  # fmt: skip
            put(f"blk.{i}.{name}.weight", tensor)
    put("output_norm.weight", ours.norm.weight)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def quantize_gguf(source: Path, target: Path) -> None:
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
    params.nthread = 1
    if llama_cpp.llama_model_quantize(str(source).encode(), str(target).encode(), params) != 0:
        raise RuntimeError("llama.cpp could not quantize the model to q8_0")


# -- one engine in one process ---------------------------------------------------------------------


def inputs(shape: dict, batch: int, length: int, seed: int = 1) -> torch.Tensor:
    low, high = 3, shape["vocab_size"] - 2
    return torch.randint(low, high, (batch, length), generator=torch.Generator().manual_seed(seed))


class Runner:
    """What a worker process runs: ``run()`` makes the tokens once; ``bytes_per_step`` the weights one step reads."""

    bytes_per_step = 0

    def run(self) -> list[list[int]]:
        raise NotImplementedError


class Ours(Runner):
    def __init__(self, family: str, folder: Path, precision: str, setting: dict) -> None:
        from transformer_course import from_llama, from_marian, quantize
        from transformer_course_tools.engine.plan import plan_for

        hf = _load_hf(family, folder)
        model = (from_marian if family == "marian" else from_llama)(hf)
        del hf
        self.model = model if precision == "float32" else quantize(model, precision)
        self.setting, self.family = setting, family
        self.bytes_per_step = plan_for(self.model).nbytes

    def run(self) -> list[list[int]]:
        from transformer_course import beam_search, generate, greedy_decode
        from transformer_course_tools.engine import ENGINE

        s = self.setting
        if self.family == "smollm":
            return generate(self.model, s["prompt"], NEW_TOKENS, path=ENGINE)[:, PROMPT_LEN:].tolist()
        if s["beam"] == 1:
            return greedy_decode(self.model, s["src"], max_len=TGT_LEN, path=ENGINE).tolist()
        return beam_search(self.model, s["src"], s["beam"], max_len=TGT_LEN, path=ENGINE)[0][:, 0].tolist()


class Transformers(Runner):
    def __init__(self, family: str, folder: Path, precision: str, setting: dict) -> None:
        self.model, self.setting, self.family = _load_hf(family, folder), setting, family

    def run(self) -> list[list[int]]:
        s, model = self.setting, self.model
        with torch.no_grad():
            if self.family == "smollm":
                out = model.generate(s["prompt"], do_sample=False, max_new_tokens=NEW_TOKENS,
                                     min_new_tokens=NEW_TOKENS, pad_token_id=0)  # fmt: skip
                return out[:, PROMPT_LEN:].tolist()
            pad = model.config.pad_token_id
            out = model.generate(
                input_ids=s["src"], attention_mask=s["src"] != pad, do_sample=False, num_beams=s["beam"],
                max_new_tokens=TGT_LEN, min_new_tokens=TGT_LEN, suppress_tokens=[pad],
            )  # fmt: skip
            return out[:, 1:].tolist()


class CTranslate2(Runner):
    def __init__(self, family: str, folder: Path, precision: str, setting: dict) -> None:
        import ctranslate2

        compute = {"float32": "float32", "int8": "int8_float32"}[precision]
        self.translator = ctranslate2.Translator(str(folder / "ct2"), device="cpu", compute_type=compute,
                                                 inter_threads=1, intra_threads=1)  # fmt: skip
        self.setting = setting

    def run(self) -> list[list[int]]:
        s = self.setting
        source = [[f"t{i}" for i in row] + ["t0"] for row in s["src"][:, :-1].tolist()]  # ends with </s> (id 0)
        results = self.translator.translate_batch(
            source, beam_size=s["beam"], max_decoding_length=TGT_LEN, min_decoding_length=TGT_LEN,
            max_batch_size=0, return_scores=False,
        )  # fmt: skip
        return [[int(token[1:]) for token in result.hypotheses[0]] for result in results]


class LlamaCpp(Runner):
    def __init__(self, family: str, folder: Path, precision: str, setting: dict) -> None:
        import llama_cpp

        name = {"float32": "model-f32.gguf", "int8": "model-q8_0.gguf"}[precision]
        self.llm = llama_cpp.Llama(str(folder / name), n_threads=1, n_threads_batch=1, n_ctx=PROMPT_LEN + NEW_TOKENS,
                                   n_batch=PROMPT_LEN, logits_all=False, verbose=False)  # fmt: skip
        self.setting = setting

    def run(self) -> list[list[int]]:
        import numpy as np

        prompt, vocab = self.setting["prompt"][0].tolist(), self.llm.n_vocab()
        self.llm.reset()
        self.llm.eval(prompt)
        made = []
        for _ in range(NEW_TOKENS):  # greedy: the largest of the last position's logits
            logits = np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=(vocab,))
            made.append(int(np.argmax(logits)))
            self.llm.eval(made[-1:])
        return [made]


ENGINES = {"ours": Ours, "transformers": Transformers, "ctranslate2": CTranslate2, "llama.cpp": LlamaCpp}


def _load_hf(family: str, folder: Path) -> torch.nn.Module:
    from transformers import LlamaForCausalLM, MarianMTModel

    cls = MarianMTModel if family == "marian" else LlamaForCausalLM
    kwargs = {"dtype": torch.float32} if "dtype" in cls.from_pretrained.__code__.co_varnames else {}
    model = cls.from_pretrained(folder, **kwargs).float().eval()
    model.generation_config.forced_eos_token_id = None
    return model


def worker(spec: dict) -> None:
    """A worker process: load one engine, then answer "run" with the tokens and the CPU seconds."""
    torch.set_num_threads(1)
    family, shape = spec["family"], spec["shape"]
    setting = {"beam": spec["beam"]}
    if family == "marian":
        setting["src"] = inputs(shape, spec["batch"], SRC_LEN)
    else:
        setting["prompt"] = inputs(shape, spec["batch"], PROMPT_LEN)
    runner = ENGINES[spec["engine"]](family, Path(spec["folder"]), spec["precision"], setting)
    print(json.dumps({"ready": True, "bytes_per_step": runner.bytes_per_step}), flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        tokens = runner.run()
        cpu, wall = time.process_time() - start_cpu, time.perf_counter() - start_wall
        print(json.dumps({"cpu": cpu, "wall": wall, "tokens": tokens}), flush=True)


class Process:
    def __init__(self, spec: dict) -> None:
        self.spec = spec
        env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, "-m", "benchmarks.engines", "--worker", json.dumps(spec)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)  # fmt: skip
        self.ready = self._read()

    def _read(self) -> dict:
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the {self.spec['engine']} process ended without answering")
            if line.startswith("{"):
                return json.loads(line)

    def run(self) -> dict:
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


# -- the measurements ------------------------------------------------------------------------------


def read_bandwidth() -> float:
    """One thread's read bandwidth in GB/s: a sum over 1 GiB of float32, the best of five (CPU time,
    as the engines are timed)."""
    torch.set_num_threads(1)
    x = torch.ones(2**28)
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        x.sum()
        best = min(best, time.process_time() - start)
    return x.numel() * 4 / best / 1e9


def settings(family: str) -> list[dict]:
    if family == "smollm":
        return [dict(batch=1, beam=1)]
    return [dict(batch=b, beam=k) for k in (1, 4) for b in (1, 16)]


def engines(family: str) -> list[tuple[str, str]]:
    other = "ctranslate2" if family == "marian" else "llama.cpp"
    return [("ours", "float32"), (other, "float32"), ("transformers", "float32"), ("ours", "int8"), (other, "int8")]


def measure(family: str, shape: dict, folder: Path, setting: dict, rounds: int) -> dict:
    """Every engine for one setting, interleaved; their tokens checked; CPU seconds per round."""
    procs = {
        f"{engine} {precision}": Process(dict(engine=engine, precision=precision, family=family, shape=shape,
                                              folder=str(folder), **setting))
        for engine, precision in engines(family)
    }  # fmt: skip
    try:
        first = {name: proc.run() for name, proc in procs.items()}  # a warm-up run, not timed: the tokens
        times: dict[str, list[float]] = {name: [] for name in first}
        names = list(procs)
        for r in range(rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                times[name].append(procs[name].run()["cpu"])
        tokens = {name: r["tokens"] for name, r in first.items()}
        nbytes = {name: proc.ready["bytes_per_step"] for name, proc in procs.items()}
    finally:
        for proc in procs.values():
            proc.close()
    return {"times": times, "tokens": tokens, "bytes": nbytes}


def agreement(a: list[list[int]], b: list[list[int]]) -> float:
    pairs = [(x, y) for row_a, row_b in zip(a, b, strict=True) for x, y in zip(row_a, row_b, strict=False)]
    return sum(x == y for x, y in pairs) / max(len(pairs), 1)


def report(family: str, setting: dict, result: dict, bandwidth: float) -> list[str]:
    made = setting["batch"] * (TGT_LEN if family == "marian" else NEW_TOKENS)
    times, tokens = result["times"], result["tokens"]
    reference = tokens["transformers float32"]
    what = "greedy" if setting["beam"] == 1 else f"beam {setting['beam']}"
    lines = []
    for name, seconds in times.items():
        median, best = statistics.median(seconds), min(seconds)
        precision = name.split()[-1]
        base = tokens["ours float32"] if precision != "float32" else reference
        same = agreement(tokens[name], base)
        line = [family, what, str(setting["batch"]), name, f"{made / median:,.1f}", f"{made / best:,.1f}",
                f"{same:.0%}" + (" of f32" if precision != "float32" else "")]  # fmt: skip
        ours = f"ours {precision}"
        ratio = statistics.median(times[ours]) / median if ours in times else float("nan")
        line.append("–" if name.startswith("ours") else f"**{1 / ratio:.2f}**")
        share = "–"
        if name.startswith("ours") and setting["batch"] == 1 and result["bytes"][name]:
            per_token = median / (TGT_LEN if family == "marian" else NEW_TOKENS)
            share = f"{result['bytes'][name] / per_token / 1e9 / bandwidth:.0%}"
        line.append(share)
        lines.append("| " + " | ".join(line) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--only", choices=("marian", "smollm"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="tiny shapes, two rounds")
    parser.add_argument("--record", action="store_true", help="append the table to benchmarks/results.md")
    parser.add_argument("--gpu", action="store_true", help="the course's modules and engine on a CUDA GPU")
    parser.add_argument("--kernels", action="store_true", help="the engine's choices: each product, kernel and layout")
    parser.add_argument("--learners", action="store_true",
                        help="the shipped translator and language model exported, in CTranslate2 and llama.cpp")  # fmt: skip
    args = parser.parse_args(argv)
    if args.worker:
        worker(json.loads(args.worker))
        return 0
    if args.kernels:
        if any(os.environ.get(name) != value for name, value in ONE_THREAD.items()):  # NumPy's BLAS reads it at import
            return subprocess.run([sys.executable, "-m", "benchmarks.engines", *(argv or sys.argv[1:])],
                                  env={**os.environ, **ONE_THREAD}, cwd=ROOT).returncode  # fmt: skip
        print(kernels(args.rounds))
        return 0
    if args.learners:
        header = (f"Machine: {platform.processor() or platform.machine()} ({_cpu_name()}), torch {torch.__version__}; "
                  f"one thread; {args.rounds} interleaved rounds, CPU time; load average {os.getloadavg()[0]:.2f}")  # fmt: skip
        print(header + "\n\n" + learners(args.rounds))
        return 0
    shapes = QUICK if args.quick else {"marian": MARIAN, "smollm": SMOLLM}
    shapes = {family: shape for family, shape in shapes.items() if not args.only or family == args.only}
    rounds = 2 if args.quick else args.rounds
    if args.gpu:
        print(gpu(shapes, rounds))
        return 0
    bandwidth = read_bandwidth()
    header = (
        f"Machine: {platform.processor() or platform.machine()} ({_cpu_name()}), python {platform.python_version()}, "
        f"torch {torch.__version__}; one thread per engine; one-thread read bandwidth {bandwidth:.1f} GB/s; "
        f"{rounds} interleaved rounds, CPU time; load average at start {os.getloadavg()[0]:.2f}"
    )
    print(header)
    rows = ["| shape | decoding | batch | engine | tokens/s (median) | tokens/s (best) | same tokens | vs ours | "
            "bytes/s of bandwidth |", "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for family, shape in shapes.items():
            folder = Path(tmp) / family
            prepare(family, shape, folder)
            for setting in settings(family):
                result = measure(family, shape, folder, setting, rounds)
                lines = report(family, setting, result, bandwidth)
                print("\n".join(lines), flush=True)
                rows += lines
    text = header + "\n\n" + "\n".join(rows) + f"\n\nLoad average at end {os.getloadavg()[0]:.2f}.\n"
    print(text)
    if args.record:
        with open(ROOT / "benchmarks" / "results.md", "a", encoding="utf-8") as f:
            f.write(f"\n## Engines (`python -m benchmarks.engines`, {time.strftime('%Y-%m-%d')})\n\n{text}")
    return 0


# -- the learner's own models, out of the course (issue 50) -------------------------------------------

LEARNER_NUMBERS = 16  # number words translated per round (batch 1: one at a time; batch 16: together)
LEARNER_PROMPTS = ("Ham. To be, or not to be", "Enter the Ghost", "O Romeo, Romeo", "Mac. Is this a dagger",
                   "What is the matter")  # fmt: skip
LEARNER_NEW = 64  # at most, per prompt (the shipped language model reads 128 positions)


def learners(rounds: int) -> str:
    """The shipped translator and language model, exported as a learner exports theirs
    (``python -m transformer_course export``), in CTranslate2 and llama.cpp (where llama-cpp-python
    is installed) beside the course's engine: one thread each, in this one process, CPU time, a
    warm-up run then ``rounds`` interleaved rounds; tokens per second of the medians; every engine's
    tokens against the course engine's float32."""
    import random

    from transformer_course_tools.models.export.ct2 import write_ctranslate2
    from transformer_course_tools.models.export.gguf_file import write_gguf
    from transformer_course_tools.models.export.sources import load_source

    torch.set_num_threads(1)
    lines = ["| model | decoding | batch | engine | tokens/s (median) | tokens/s (best) | same tokens | vs ours |",
             "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        numbers = load_source("numbers-en-de")
        ct2 = {
            p: write_ctranslate2(numbers, tmp / f"numbers-{p}", p, tmp / f"hf-numbers-{p}") for p in ("float32", "int8")
        }
        rng = random.Random(0)
        from transformer_course.datasets.numbers import number_to_english

        texts = [number_to_english(rng.randrange(1_000_000)) for _ in range(LEARNER_NUMBERS)]
        for batch in (1, LEARNER_NUMBERS):
            runs = _translator_runs(numbers, ct2, texts, batch)
            lines += _learner_rows("numbers-en-de", "greedy", batch, _timed(runs, rounds))
        lm = load_source("shakespeare-lm")
        ct2 = {p: write_ctranslate2(lm, tmp / f"lm-{p}", p, tmp / f"hf-lm-{p}") for p in ("float32", "int8")}
        tokens = [lm.tokenizer.id_to_token(i) for i in range(lm.tokenizer.get_vocab_size())]
        ggufs = {p: write_gguf(lm.model, tokens, tmp / f"lm-{p}.gguf", p) for p in ("float32", "int8")}
        lines += _learner_rows("shakespeare-lm", "greedy", 1, _timed(_lm_runs(lm, ct2, ggufs), rounds))
    return "\n".join(lines)


def _translator_runs(source, ct2: dict, texts: list[str], batch: int) -> dict:
    import ctranslate2

    from transformer_course import greedy_decode, quantize
    from transformer_course.batching import pad_sequences
    from transformer_course_tools.engine import ENGINE

    models = {"float32": source.model, "int8": quantize(source.model, "int8")}
    ids = [source.tokenizer.encode(t).ids for t in texts]
    pieces = [source.tokenizer.encode(t).tokens for t in texts]
    groups = [slice(i, i + batch) for i in range(0, len(texts), batch)]
    eos, pad = source.model.config.eos_id, source.model.config.pad_id

    def ours(model):
        def run() -> list[list[int]]:
            out = []
            for g in groups:
                rows = greedy_decode(model, pad_sequences(ids[g], pad), path=ENGINE).tolist()
                out += [row[: row.index(eos)] if eos in row else row for row in rows]
            return out

        return run

    def theirs(path: Path, compute: str):
        translator = ctranslate2.Translator(str(path), device="cpu", compute_type=compute, inter_threads=1,
                                            intra_threads=1)  # fmt: skip

        def run() -> list[list[int]]:
            out = []
            for g in groups:
                results = translator.translate_batch(pieces[g], beam_size=1, min_decoding_length=0)
                out += [[source.tokenizer.token_to_id(t) for t in r.hypotheses[0]] for r in results]
            return out

        return run

    return {"ours float32": ours(models["float32"]), "ctranslate2 float32": theirs(ct2["float32"], "float32"),
            "ours int8": ours(models["int8"]), "ctranslate2 int8": theirs(ct2["int8"], "int8_float32")}  # fmt: skip


def _lm_runs(source, ct2: dict, ggufs: dict) -> dict:
    import ctranslate2

    from transformer_course import generate, quantize
    from transformer_course_tools.engine import ENGINE

    c = source.model.config
    prompts = [source.tokenizer.encode(p).ids for p in LEARNER_PROMPTS]  # <bos> first
    banned = [c.pad_id, c.bos_id]

    def ours(model):
        def run() -> list[list[int]]:
            rows = [generate(model, torch.tensor([p]), LEARNER_NEW, path=ENGINE)[0].tolist() for p in prompts]
            return [row[len(p) :] for row, p in zip(rows, prompts, strict=True)]

        return run

    def theirs(path: Path, compute: str):
        generator = ctranslate2.Generator(str(path), device="cpu", compute_type=compute, inter_threads=1,
                                          intra_threads=1)  # fmt: skip
        starts = [[source.tokenizer.id_to_token(i) for i in p] for p in prompts]
        suppress = [[source.tokenizer.id_to_token(i)] for i in banned]

        def run() -> list[list[int]]:
            results = generator.generate_batch(starts, max_length=LEARNER_NEW, suppress_sequences=suppress,
                                               include_prompt_in_result=False, return_end_token=True)  # fmt: skip
            return [[source.tokenizer.token_to_id(t) for t in r.sequences[0]] for r in results]

        return run

    runs = {"ours float32": ours(source.model), "ctranslate2 float32": theirs(ct2["float32"], "float32"),
            "ours int8": ours(quantize(source.model, "int8")), "ctranslate2 int8": theirs(ct2["int8"], "int8_float32")}  # fmt: skip
    try:
        import llama_cpp
    except ImportError:
        return runs  # llama.cpp where llama-cpp-python is installed
    from transformer_course_tools.models.export.gguf_file import llama_cpp_greedy

    def llama(path: Path):
        llm = llama_cpp.Llama(str(path), n_threads=1, n_threads_batch=1, n_ctx=c.max_len, n_batch=c.max_len,
                              logits_all=False, verbose=False)  # fmt: skip
        return lambda: [llama_cpp_greedy(llm, p, LEARNER_NEW, banned, c.eos_id) for p in prompts]

    return runs | {"llama.cpp float32": llama(ggufs["float32"]), "llama.cpp q8_0": llama(ggufs["int8"])}


def _timed(runs: dict, rounds: int) -> dict:
    """Each run once untimed (its tokens), then ``rounds`` interleaved rounds of CPU time."""
    from transformer_course_tools.notebook.speed import interleaved

    tokens = {name: run() for name, run in runs.items()}  # the warm-up
    return {"tokens": tokens, "times": interleaved(runs, rounds, warm_up=False)}


def _learner_rows(model: str, decoding: str, batch: int, result: dict) -> list[str]:
    tokens, times = result["tokens"], result["times"]
    reference = tokens["ours float32"]
    made = sum(len(row) for row in reference)
    rows = []
    for name, seconds in times.items():
        precision = name.split()[-1]
        ours = "ours float32" if precision == "float32" else "ours int8"
        same = agreement(tokens[name], reference)
        ratio = statistics.median(times[ours]) / statistics.median(seconds)
        rows.append(f"| {model} | {decoding} | {batch} | {name} | {made / statistics.median(seconds):,.1f} | "
                    f"{made / min(seconds):,.1f} | {same:.0%} | {'–' if name == ours else f'**{1 / ratio:.2f}**'} |")  # fmt: skip
    return rows


def gpu(shapes: dict, rounds: int) -> str:
    """On a CUDA GPU: the course's modules and its engine, float32, bfloat16 and int8, tokens per
    second at batch 1 and 16 (wall clock, synchronised; medians of ``rounds``), with ``transformers``."""
    from transformers import LlamaConfig, LlamaForCausalLM, MarianConfig, MarianMTModel

    from transformer_course import from_llama, from_marian, quantize
    from transformer_course_tools.engine import ENGINE

    device = torch.device("cuda")
    lines = [f"GPU: {torch.cuda.get_device_name(0)}, torch {torch.__version__}", "",
             "| shape | batch | model | precision | path | tokens/s | same tokens as the modules |",
             "| --- | ---: | --- | --- | --- | ---: | ---: |"]  # fmt: skip
    for family, shape in shapes.items():
        torch.manual_seed(0)
        if family == "marian":
            hf = MarianMTModel(MarianConfig(**shape)).eval()
        else:
            hf = LlamaForCausalLM(LlamaConfig(**shape)).eval()
        draw_every_tensor(hf)
        if family == "marian":
            with torch.no_grad():
                hf.final_logits_bias[0, shape["eos_token_id"]] = -1e4
        ours = (from_marian if family == "marian" else from_llama)(hf)
        if family == "smollm":
            with torch.no_grad():
                ours.output.weight[ours.config.eos_id] = 0.0
        for batch in (1, 16):
            x = inputs(shape, batch, SRC_LEN if family == "marian" else PROMPT_LEN).to(device)
            made = batch * (TGT_LEN if family == "marian" else NEW_TOKENS)
            for precision in ("float32", "bf16", "int8"):
                model = (ours if precision == "float32" else quantize(ours, precision)).to(device)
                tokens = {}
                for path in ("modules", ENGINE):
                    tokens[path] = _decode(family, model, x, path)
                    seconds = []
                    for _ in range(rounds):
                        torch.cuda.synchronize()
                        start = time.perf_counter()
                        _decode(family, model, x, path)
                        torch.cuda.synchronize()
                        seconds.append(time.perf_counter() - start)
                    same = agreement(tokens[path].tolist(), tokens["modules"].tolist())
                    lines.append(f"| {family} | {batch} | ours | {precision} | {path} | "
                                 f"{made / statistics.median(seconds):,.0f} | {same:.0%} |")  # fmt: skip
                    print(lines[-1], file=sys.stderr, flush=True)  # progress; the table goes to stdout once
    return "\n".join(lines)


def layer_matrices(family: str) -> list[tuple[int, int]]:
    """(in, out) of every matrix a decoding step of the real shape multiplies, in order (the output layer last)."""
    if family == "marian":
        d, ff = MARIAN["d_model"], MARIAN["decoder_ffn_dim"]  # W^QKV, W^O, cross W^Q and W^O, W1, W2
        return [(d, 3 * d), (d, d), (d, d), (d, d), (d, ff), (ff, d)] * MARIAN["decoder_layers"] + [
            (d, MARIAN["vocab_size"])
        ]
    d, ff, kv = SMOLLM["hidden_size"], SMOLLM["intermediate_size"], SMOLLM["num_key_value_heads"]
    qkv = d + 2 * kv * d // SMOLLM["num_attention_heads"]  # W^Q, W^K, W^V stacked
    return [(d, qkv), (d, d), (d, 2 * ff), (ff, d)] * SMOLLM["num_hidden_layers"] + [(d, SMOLLM["vocab_size"])]


def kernels(rounds: int) -> str:
    """The products of one decoding step of each real shape, in each kernel and layout the engine could
    use, for 1, 4, 16 and 64 rows: what the choices in transformer_course_tools/engine/weights.py rest on. One
    thread, CPU time, every matrix a distinct tensor (the weights come from memory, as in decoding),
    the kernels interleaved in each round; medians. GB/s = the weights' bytes / the time."""
    import numpy as np

    torch.set_num_threads(1)
    lines = [f"Machine: {_cpu_name()}, torch {torch.__version__}, numpy {np.__version__}; one thread; "
             f"one-thread read bandwidth {read_bandwidth():.1f} GB/s; {rounds} rounds, medians", "",
             "| shape | rows | kernel and layout | ms per step | GB/s of weights |", "| --- | ---: | --- | ---: | ---: |"]  # fmt: skip
    for family in ("marian", "smollm"):
        shapes = layer_matrices(family)
        weights = [torch.randn(o, i) / i**0.5 for i, o in shapes]  # (out, in): nn.Linear's layout
        nbytes = {"float32": sum(w.numel() * 4 for w in weights), "int8": sum(w.numel() for w in weights)}
        layouts = _layouts(weights)
        for rows in (1, 4, 16, 64):
            products = _products({i: torch.randn(rows, i) for i, _ in shapes}, **layouts)
            times: dict[str, list[float]] = {name: [] for name in products}
            for product in products.values():
                product()  # warm-up
            for _ in range(rounds):
                for name, product in products.items():
                    start = time.process_time()
                    product()
                    times[name].append(time.process_time() - start)
            for name, seconds in times.items():
                median = statistics.median(seconds)
                read = nbytes["int8" if name.startswith("int8") else "float32"]
                lines.append(f"| {family} | {rows} | {name} | {1000 * median:.1f} | {read / median / 1e9:.1f} |")
                print(lines[-1], file=sys.stderr, flush=True)  # progress; the table goes to stdout once
    return "\n".join(lines)


def _layouts(weights: list[torch.Tensor]) -> dict:
    """The matrices (out, in) in each layout :func:`kernels` times, made once."""
    from transformer_course.quantize import fbgemm_pack, quantize_rows
    from transformer_course_tools.engine.weights import blocked

    int8 = [quantize_rows(w) for w in weights]
    return {"weights": weights, "transposed": [w.t().contiguous() for w in weights],
            "packed": [blocked(w) for w in weights], "int8": [(q, s, fbgemm_pack(q, s)) for q, s in int8]}  # fmt: skip


def _products(x: dict, weights: list, transposed: list, packed: list, int8: list) -> dict:
    """One step's products in each kernel and layout, for the rows ``x[in_features]``."""
    from transformer_course.quantize import int8_linear

    xn = {i: v.numpy() for i, v in x.items()}
    linear, onednn = torch.nn.functional.linear, torch.ops.mkldnn._linear_pointwise
    return {
        "float32, MKL, nn.Linear's (out, in)": lambda: [linear(x[w.shape[1]], w) for w in weights],
        "float32, MKL, W^T (in, out)": lambda: [x[w.shape[0]].mm(w) for w in transposed],
        "float32, oneDNN, blocked": lambda: [onednn(x[w.shape[1]], b, None, "none", [], "")
                                             for w, b in zip(weights, packed, strict=True)],
        "float32, NumPy's BLAS, W^T (in, out)": lambda: [xn[w.shape[0]] @ w.numpy() for w in transposed],
        "int8 (weights and input), fbgemm": lambda: [int8_linear(x[q.shape[1]], q, s, None, p) for q, s, p in int8],
    }  # fmt: skip


def _decode(family: str, model: torch.nn.Module, x: torch.Tensor, path: str) -> torch.Tensor:
    from transformer_course import generate, greedy_decode

    if family == "marian":
        return greedy_decode(model, x, max_len=TGT_LEN, path=path)
    return generate(model, x, NEW_TOKENS, path=path)


def prepare(family: str, shape: dict, folder: Path) -> None:
    """Draw the model, save it for ``transformers``, convert it for CTranslate2 or write it for llama.cpp."""
    folder.mkdir(parents=True)
    if family == "marian":
        make_marian(shape, folder)
        convert_ct2(folder)
    else:
        make_smollm(shape, folder)
        quantize_gguf(folder / "model-f32.gguf", folder / "model-q8_0.gguf")


def convert_ct2(folder: Path) -> None:
    """CTranslate2's own converter, given the saved model and a vocabulary named t0, t1, … (no tokenizer)."""
    from ctranslate2.converters import TransformersConverter

    class Vocabulary:  # what the converter reads of a tokenizer
        def __init__(self, size: int) -> None:
            self.size = size
            self.eos_token, self.unk_token = "t0", "t1"

        def get_vocab(self) -> dict[str, int]:
            return {f"t{i}": i for i in range(self.size - 1)} | {"<pad>": self.size - 1}

    class Converter(TransformersConverter):
        def load_tokenizer(self, tokenizer_class, model_name_or_path, **kwargs):  # noqa: ANN001, ANN003, ANN201
            return Vocabulary(_load_hf("marian", folder).config.vocab_size)

    Converter(str(folder)).convert(str(folder / "ct2"), force=True)


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


if __name__ == "__main__":
    raise SystemExit(main())
