"""``generate``: continue a prompt with a real decoder-only checkpoint (chapters 15 and 16).

python -m transformer_course generate --hub HuggingFaceTB/SmolLM2-135M "The capital of France is"
python -m transformer_course generate --hub openai-community/gpt2 "Once upon a time" --temperature 0.8 --top-p 0.9 --seed 0

The checkpoint's tokenizer reads the prompt; its weights, converted into the course's
DecoderOnlyLM (``from_llama`` for the Llama family, ``from_gpt2`` for GPT-2, chosen by the
configuration's ``model_type``), continue it with the course's own ``generate`` and cache. The
prompt and its continuation are printed as one text.
"""

from __future__ import annotations

import argparse

from . import CLIError


def _check_options(args: argparse.Namespace) -> None:
    if not args.prompt.strip():
        raise CLIError("nothing to continue: the prompt is empty")
    if args.max_new_tokens < 1:
        raise CLIError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    if args.temperature < 0:
        raise CLIError(f"--temperature must be >= 0 (0 = greedy), got {args.temperature}")
    if args.top_k is not None and args.top_k < 1:
        raise CLIError(f"--top-k must be >= 1, got {args.top_k}")
    if args.top_p is not None and not 0 < args.top_p <= 1:
        raise CLIError(f"--top-p must be in (0, 1], got {args.top_p}")
    sampling = {"--top-k": args.top_k, "--top-p": args.top_p, "--seed": args.seed}
    given = [flag for flag, value in sampling.items() if value is not None]
    if given and args.temperature == 0:
        raise CLIError(f"{', '.join(given)} only matter when sampling: give --temperature > 0 as well")


def _generate(args: argparse.Namespace) -> int:
    import torch

    from transformer_course.lm import generate
    from transformer_course_tools.models.hub import course_model, load_hub

    _check_options(args)
    tokenizer, hf_model = load_hub(args.hub, "causal-lm")
    model = course_model(args.hub, hf_model)
    del hf_model  # the course's model holds its own copy of the weights
    ids = list(tokenizer(args.prompt)["input_ids"])  # Llama's tokenizer starts with <s>; GPT-2's adds nothing
    room = model.config.max_len - len(ids)
    if args.max_new_tokens > room:
        raise CLIError(
            f"--max-new-tokens {args.max_new_tokens} does not fit: the prompt has {len(ids)} tokens and "
            f"{args.hub} reads at most {model.config.max_len}"
        )
    prompt = torch.tensor([ids], device=next(model.parameters()).device)  # (1, T)
    generator = None if args.seed is None else torch.Generator(prompt.device).manual_seed(args.seed)
    tokens = generate(
        model, prompt, args.max_new_tokens, temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
        generator=generator,
    )  # fmt: skip  # (1, T + n)
    print(tokenizer.decode(tokens[0].tolist(), skip_special_tokens=True))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "generate",
        usage="%(prog)s --hub NAME PROMPT [--max-new-tokens N] [--temperature T] [--top-k K] [--top-p P] [--seed S]",
        help="continue a prompt with a real language model (Llama family, GPT-2)",
        description="Continue a prompt with a decoder-only checkpoint of the Hugging Face Hub (Llama family or "
        "GPT-2), converted into the course's DecoderOnlyLM (chapters 15 and 16). Greedy unless --temperature > 0.",
    )
    parser.add_argument("prompt", metavar="PROMPT", help="the text to continue")
    parser.add_argument(
        "--hub",
        metavar="NAME",
        required=True,
        help="a Llama-family or GPT-2 checkpoint of the Hugging Face Hub (e.g. HuggingFaceTB/SmolLM2-135M) or its "
        "local folder: downloaded once (needs transformer-course[hub]), then read from the local cache",
    )
    parser.add_argument("--max-new-tokens", type=int, default=50, help="most tokens to add (default 50)")
    parser.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (the default); > 0 samples")
    parser.add_argument("--top-k", type=int, default=None, help="sample among the k most probable tokens only")
    parser.add_argument("--top-p", type=float, default=None, help="sample within the nucleus of probability p")
    parser.add_argument("--seed", type=int, default=None, help="seed of the sampling, for a reproducible text")
    parser.set_defaults(run=_generate)
