"""Chapter 12 — checkpoint averaging (paper §6.1): the mean of the weights, by hand and from files."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from transformer_course import Transformer, TransformerConfig
from transformer_course.averaging import average_checkpoints, average_state_dicts
from transformer_course.checkpoint import save_checkpoint
from transformer_course.vocab import Vocab

VOCAB = Vocab([chr(ord("a") + i) for i in range(8)])


def _model(seed: int, **overrides) -> Transformer:
    torch.manual_seed(seed)
    config = TransformerConfig(len(VOCAB), len(VOCAB), d_model=8, n_heads=2, d_ff=16, n_encoder_layers=1,
                               n_decoder_layers=1, max_len=16, share_embeddings=True, **overrides)  # fmt: skip
    return Transformer(config)


def test_the_mean_by_hand() -> None:
    states = [
        {"w": torch.tensor([1.0, 2.0]), "n": torch.tensor(3)},
        {"w": torch.tensor([3.0, 6.0]), "n": torch.tensor(3)},
    ]
    averaged = average_state_dicts(states)
    assert averaged["w"].tolist() == [2.0, 4.0] and averaged["n"].item() == 3 and averaged["n"].dtype == torch.long
    assert average_state_dicts(states[:1])["w"].tolist() == [1.0, 2.0]


def test_the_order_does_not_matter_and_dtypes_stay() -> None:
    torch.manual_seed(0)
    states = [{"w": torch.randn(50).to(torch.float16)} for _ in range(5)]
    forward, backward = average_state_dicts(states), average_state_dicts(states[::-1])
    assert forward["w"].dtype == torch.float16 and torch.equal(forward["w"], backward["w"])
    exact = torch.stack([s["w"].double() for s in states]).mean(0)
    assert torch.allclose(forward["w"].double(), exact, atol=1e-3)


@pytest.mark.parametrize(
    "states, message",
    [
        ([], "nothing to average"),
        ([{"a": torch.zeros(2)}, {"b": torch.zeros(2)}], "other keys"),
        ([{"a": torch.zeros(2)}, {"a": torch.zeros(3)}], r"a: state 1 has \(3,\)"),
        ([{"a": torch.zeros(2)}, {"a": torch.zeros(2, dtype=torch.float64)}], "torch.float64"),
        ([{"n": torch.tensor(1)}, {"n": torch.tensor(2)}], "not floating point and differs"),
    ],
)
def test_what_cannot_be_averaged(states, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        average_state_dicts(states)


def test_average_checkpoints_of_one_run(tmp_path: Path) -> None:
    models = [_model(seed) for seed in range(3)]  # stand-ins for three checkpoints of one run
    paths = [save_checkpoint(tmp_path / f"{i}.pt", m, VOCAB, VOCAB, step=100 * (i + 1)) for i, m in enumerate(models)]
    averaged = average_checkpoints(paths)
    expected = torch.stack([m.output.weight.detach() for m in models]).mean(0)
    assert torch.allclose(averaged.model.output.weight, expected, atol=1e-6)
    assert averaged.model.output.weight is averaged.model.src_embed.weight, "the shared matrix stays shared"
    assert averaged.step == 300 and averaged.extra["averaged_steps"] == [100, 200, 300]
    assert averaged.optimizer_state is None and not averaged.model.training


def test_checkpoints_of_other_configurations_are_refused(tmp_path: Path) -> None:
    a = save_checkpoint(tmp_path / "a.pt", _model(0), VOCAB, VOCAB)
    b = save_checkpoint(tmp_path / "b.pt", _model(0, norm_first=True), VOCAB, VOCAB)
    with pytest.raises(ValueError, match="another model configuration"):
        average_checkpoints([a, b])
    with pytest.raises(ValueError, match="give the checkpoints"):
        average_checkpoints([])
