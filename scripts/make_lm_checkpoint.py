"""Re-create the language model that ships with the course (``transformer_course/tools/assets``).

    python scripts/make_lm_checkpoint.py --threads 1   # ~8 CPU-minutes (5 minutes on an idle 2-core machine)

The language-model chapter's recipe on real text: six plays by Shakespeare (public domain,
``transformer_course/datasets/shakespeare.py``) cut by chapter 12's byte-pair tokenizer, trained
on the plays' passages packed into texts of at most ``max_tokens`` ids; today's block
(``DecoderOnlyConfig.modern``: pre-LN, RMSNorm, rotary positions, SwiGLU, grouped key/value heads)
with AdamW and a warm-up + cosine schedule (``recipe.py``), dropout 0.1, and the weights of the
step with the lowest validation loss (measured every 100 steps on the held-out end of each play:
the plays are small, and the model would learn them by heart). It writes ``shakespeare_lm.pt`` (the
weights, the tokenizer and, in ``extra``, the recipe, the validation loss, the training time and
a few greedy samples) and records its SHA-256 in ``shakespeare_lm.pt.sha256``, which
``load_pretrained_lm()`` checks. The run is seeded: on the same CPU and PyTorch build it gives the
same weights, bit for bit; the file records the seconds training took, so its bytes and hash
change with every run: commit the new hash with the file.

The embeddings are looked up unscaled (``scale_embedding=False``, as Llama does): the model is then
a Llama in every respect, and ``to_llama`` exports it as it is, no folding needed. SwiGLU's hidden
size is ⅔ · 4 · D rounded up to a multiple of 32 (352), as Llama rounds it: llama.cpp's q8_0 stores
rows in blocks of 32 numbers.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from transformer_course.batching import batch_stream
from transformer_course.datasets.shakespeare import PLAYS, pack_passages, shakespeare_splits
from transformer_course.lm import DecoderOnlyConfig, DecoderOnlyLM, WithoutSource, generate
from transformer_course.lm_checkpoint import save_lm_checkpoint
from transformer_course.recipe import make_adamw, warmup_cosine_scheduler
from transformer_course.subwords import train_subwords
from transformer_course.swiglu import swiglu_hidden_size
from transformer_course.training import Evaluation, FitOptions, fit
from transformer_course_tools.models.pretrained import LM_PATH, write_sha256
from transformer_course_tools.notebook.lm_experiments import token_losses


@dataclass(frozen=True)
class LMRecipe:
    vocab_size: int = 2000  # BPE tokens, the four special ones included
    max_tokens: int = 128  # longest training text (<bos> … <eos>), and the model's max_len
    d_model: int = 128
    n_heads: int = 4
    n_kv_heads: int = 2
    n_layers: int = 4
    batch_size: int = 32
    steps: int = 1000
    dropout: float = 0.1  # 217,000 training tokens for a million weights: without it they are learnt by heart
    eval_every: int = 100  # validation loss every so many steps; the file keeps the weights of the lowest
    lr: float = 3e-3
    warmup_steps: int = 100
    weight_decay: float = 0.1
    seed: int = 0


SHIPPED = LMRecipe()
PROMPTS = ("HAMLET.", "Enter", "Ham. To be", "Rom. What", "O, ")  # greedy samples recorded in the file


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=SHIPPED.steps)
    parser.add_argument("--seed", type=int, default=SHIPPED.seed)
    parser.add_argument("--out", type=Path, default=LM_PATH)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: PyTorch's choice)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    recipe = replace(SHIPPED, steps=args.steps, seed=args.seed)
    splits = shakespeare_splits()
    tokenizer = train_subwords(splits["train"], vocab_size=recipe.vocab_size)
    pack = lambda texts: pack_passages(tokenizer.encode_batch(texts), recipe.max_tokens, tokenizer.bos_id,  # noqa: E731
                                       tokenizer.eos_id)  # fmt: skip
    train, valid = pack(splits["train"]), pack(splits["valid"])
    torch.manual_seed(recipe.seed)
    config = DecoderOnlyConfig.modern(
        len(tokenizer), d_model=recipe.d_model, n_heads=recipe.n_heads, n_kv_heads=recipe.n_kv_heads,
        n_layers=recipe.n_layers, max_len=recipe.max_tokens, scale_embedding=False, dropout=recipe.dropout,
        d_ff=swiglu_hidden_size(recipe.d_model, multiple_of=32),
    )  # fmt: skip
    model = DecoderOnlyLM(config)
    optimizer = make_adamw(model, lr=recipe.lr, weight_decay=recipe.weight_decay)
    scheduler = warmup_cosine_scheduler(optimizer, recipe.warmup_steps, recipe.steps)
    batches = batch_stream([([], ids) for ids in train], recipe.batch_size, tokenizer.pad_id, seed=recipe.seed)
    best: dict = {"valid_loss": math.inf}

    def validate(_) -> dict:  # the weights of the lowest validation loss so far are kept
        loss = token_losses(model, valid, tokenizer.pad_id).nanmean().item()
        if loss < best["valid_loss"]:
            best.update(valid_loss=loss, state={k: v.clone() for k, v in model.state_dict().items()})
        print(f"validation loss {loss:.3f}", file=sys.stderr, flush=True)
        return {"valid_loss": loss}

    start = time.perf_counter()
    history = fit(WithoutSource(model), batches, optimizer, scheduler, recipe.steps,
                  options=FitOptions(smoothing=0.0, progress=False, log_every=100),
                  evaluation=Evaluation(validate, every=recipe.eval_every))  # fmt: skip
    seconds = time.perf_counter() - start
    best_step = min(history.evals, key=lambda e: e["valid_loss"])["step"]
    model.load_state_dict(best["state"])
    model.eval()
    valid_loss = best["valid_loss"]
    prompts = [tokenizer.encode(p, add_bos=True) for p in PROMPTS]
    samples = [tokenizer.decode(generate(model, torch.tensor([ids]), 40)[0].tolist()) for ids in prompts]
    extra = {
        "text": "shakespeare", "plays": list(PLAYS), "recipe": asdict(recipe), "train_texts": len(train),
        "train_tokens": sum(len(ids) for ids in train), "valid_loss": round(valid_loss, 4), "best_step": best_step,
        "valid_losses": {e["step"]: round(e["valid_loss"], 4) for e in history.evals},
        "final_train_loss": round(history.losses[-1], 4), "seconds": round(seconds, 1), "samples": samples,
    }  # fmt: skip
    save_lm_checkpoint(args.out, model, tokenizer, step=best_step, extra=extra)
    sha_path = write_sha256(args.out)
    for text in samples:
        print(" ", text, file=sys.stderr)
    report = {**extra, "perplexity": round(math.exp(valid_loss), 1), "parameters": model.num_parameters()}
    print(json.dumps({**report, "file": str(args.out), "bytes": args.out.stat().st_size,
                      "sha256": sha_path.read_text().split()[0]}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
