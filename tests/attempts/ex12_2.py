"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

from collections import OrderedDict

import torch

from transformer_course.averaging import average_state_dicts

from . import right, wrong

# -- mutants


def _average_keys_of(states, pick):
    keys = list(states[0])
    for state in states[1:]:
        if list(state) != keys:
            raise ValueError("other keys")
    averaged = {}
    for key in keys:
        tensors = [state[key] for state in states]
        if any(t.shape != tensors[0].shape for t in tensors):
            raise ValueError(f"{key}: other shapes")
        averaged[key] = pick(tensors)
    return averaged


def _mean_of(tensors):
    if not tensors[0].is_floating_point():
        if any(not torch.equal(t, tensors[0]) for t in tensors):
            raise ValueError("integer buffer differs")
        return tensors[0].clone()
    return torch.stack([t.double() for t in tensors]).mean(0).to(tensors[0].dtype)


@wrong("mutant", "averages only the first two states")
def _first_two_only(states):
    return _average_keys_of(states[:2], _mean_of) if len(states) > 1 else _average_keys_of(states, _mean_of)


@wrong("mutant", "averages the first and the last states only", says="only the first and the last states")
def _first_and_last_only(states):
    return _average_keys_of([states[0], states[-1]], _mean_of)


@wrong("mutant", "sums without dividing")
def _sum_not_mean(states):
    return _average_keys_of(states, lambda ts: _mean_of(ts) * len(ts) if ts[0].is_floating_point() else _mean_of(ts))


@wrong("mutant", "turns integer buffers into floats")
def _integers_into_floats(states):
    return _average_keys_of(states, lambda ts: torch.stack([t.double() for t in ts]).mean(0).to(torch.float32))


@wrong("mutant", "accepts states with other keys")
def _accepts_other_keys(states):
    return {key: _mean_of([state[key] for state in states if key in state]) for key in states[0]}


@wrong(
    "mutant",
    "accumulates into states[0] in place",
    says="2 states of torch.float32: the states passed in were changed (states[0], ['embed.weight', 'layer.bias'])",
)
def _accumulates_into_the_first_state(states):
    total = states[0]  # the caller's tensors: += changes their model (a [1, 1, 1] weight becomes [2, 2, 2])
    for state in states[1:]:
        for key, tensor in state.items():
            if tensor.is_floating_point():
                total[key] += tensor
    return {key: t / len(states) if t.is_floating_point() else t.clone() for key, t in total.items()}


@wrong(
    "mutant",
    "keeps an integer buffer that differs between the states",
    says="3 states whose integer buffer norm.num_batches differs (1008, 999, 1008): an integer buffer that differs cannot be averaged",
)
def _integer_buffers_not_compared(states):
    return _average_keys_of(states, lambda ts: _mean_of(ts) if ts[0].is_floating_point() else ts[0].clone())


# -- own mistakes and alternatives


def _average(states, combine):
    for key in states[0]:
        if any(set(state) != set(states[0]) for state in states):
            raise ValueError("the states have different keys")
        if not states[0][key].is_floating_point() and any(not torch.equal(s[key], states[0][key]) for s in states):
            raise ValueError(f"the integer buffer {key} differs")
    return {
        key: combine([state[key].double() for state in states]).to(first.dtype) if first.is_floating_point() else first
        for key, first in states[0].items()
    }


@wrong("own", says="the first state is returned")
def _average_first_only(states):
    return _average(states, lambda tensors: tensors[0].clone())


@wrong("own", says="the last state")
def _average_last_only(states):
    return _average(states, lambda tensors: tensors[-1].clone())


@wrong("own", says="divided by n − 1")
def _average_over_n_minus_one(states):
    return _average(states, lambda tensors: sum(tensors) / (len(tensors) - 1))


@wrong("own", says="add them up in float64")  # issue 49's learner: the text's "in float64" was not enforced
def _average_in_float32(states):
    def mean(tensors):
        if not tensors[0].is_floating_point():
            return _mean_of(tensors)
        return torch.stack([t.float() for t in tensors]).mean(0).to(tensors[0].dtype)  # float32, not float64

    return _average_keys_of(states, mean)


@right("own")  # an OrderedDict, as state_dict() returns: the same pairs
def _average_ordered(states):
    return OrderedDict(average_state_dicts(states))


# -- tester set 'first'


@wrong("tester", "averages integer tensors too (turned to float32)", by="first")
def ex12_2_averages_integers(states):
    keys = list(states[0])
    for i, state in enumerate(states[1:], start=1):
        if list(state) != keys:
            raise ValueError(f"state {i} has other keys than state 0")
    averaged = {}
    for key in keys:
        tensors = [state[key] for state in states]
        first = tensors[0]
        for i, tensor in enumerate(tensors[1:], start=1):
            if tensor.shape != first.shape or tensor.dtype != first.dtype:
                raise ValueError(f"{key}: state {i} differs in shape or dtype")
        averaged[key] = (
            torch.stack([t.detach().double() for t in tensors])
            .mean(dim=0)
            .to(first.dtype if first.is_floating_point() else torch.float32)
        )
    return averaged


@wrong("tester", "forgot to cast back: float tensors come back float64", by="first")
def ex12_2_stays_float64(states):
    keys = list(states[0])
    for i, state in enumerate(states[1:], start=1):
        if list(state) != keys:
            raise ValueError(f"state {i} has other keys than state 0")
    averaged = {}
    for key in keys:
        tensors = [state[key] for state in states]
        first = tensors[0]
        for i, tensor in enumerate(tensors[1:], start=1):
            if tensor.shape != first.shape or tensor.dtype != first.dtype:
                raise ValueError(f"{key}: state {i} differs in shape or dtype")
        if first.is_floating_point():
            total = torch.stack([t.detach().double() for t in tensors]).sum(dim=0)
            averaged[key] = total / len(tensors)  # forgot .to(first.dtype)
        else:
            if any(not torch.equal(t, first) for t in tensors[1:]):
                raise ValueError(f"{key} differs between the states")
            averaged[key] = first.clone()
    return averaged


@wrong("tester", "no key/shape/dtype validation (raises KeyError/RuntimeError, or silently averages)", by="first")
def ex12_2_no_validation(states):
    averaged = {}
    for key in states[0]:
        tensors = [state[key] for state in states]  # KeyError / stack error instead of ValueError
        first = tensors[0]
        if first.is_floating_point():
            averaged[key] = (torch.stack([t.detach().double() for t in tensors]).sum(dim=0) / len(tensors)).to(
                first.dtype
            )
        else:
            averaged[key] = first.clone()
    return averaged


@wrong("tester", "sums in the tensors' own dtype, in the given order (not float64)", by="first")
def x09_2_own_dtype_sum(states):
    keys = list(states[0])
    for i, state in enumerate(states[1:], start=1):
        if list(state) != keys:
            raise ValueError(f"state {i} has other keys than state 0")
    averaged = {}
    for key in keys:
        tensors = [state[key] for state in states]
        first = tensors[0]
        for i, tensor in enumerate(tensors[1:], start=1):
            if tensor.shape != first.shape or tensor.dtype != first.dtype:
                raise ValueError(f"{key}: state {i} differs in shape or dtype")
        if first.is_floating_point():
            total = tensors[0].detach().clone()
            for t in tensors[1:]:
                total += t.detach()  # summed in the tensors' own dtype, in the order given
            averaged[key] = total / len(tensors)
        else:
            if any(not torch.equal(t, first) for t in tensors[1:]):
                raise ValueError(f"{key} differs between the states")
            averaged[key] = first.clone()
    return averaged


# -- tester set 'second'


def _avg_checks(states):
    if not states:
        raise ValueError("states is empty: nothing to average")
    keys = list(states[0])
    for i, state in enumerate(states[1:], start=1):
        if list(state) != keys:
            differ = sorted(set(state) ^ set(keys))
            raise ValueError(f"state {i} has other keys than state 0 (e.g. {differ[:3]}): not the same architecture")
    for key in keys:
        first = states[0][key]
        for i, state in enumerate(states[1:], start=1):
            tensor = state[key]
            if tensor.shape != first.shape or tensor.dtype != first.dtype:
                raise ValueError(
                    f"{key}: state {i} has {tuple(tensor.shape)} {tensor.dtype}, state 0 has "
                    f"{tuple(first.shape)} {first.dtype}"
                )
    return keys


@wrong("tester", "sums in the tensors' own dtype (no float64), e.g. float16 overflow/rounding", by="second")
def avg_native_dtype(states):
    keys = _avg_checks(states)
    averaged = {}
    for key in keys:
        tensors = [s[key] for s in states]
        first = tensors[0]
        if first.is_floating_point():
            averaged[key] = torch.stack([t.detach() for t in tensors]).sum(dim=0) / len(tensors)
        else:
            if any(not torch.equal(t, first) for t in tensors[1:]):
                raise ValueError(f"{key} is not floating point and differs between the states: cannot average it")
            averaged[key] = first.clone()
    return averaged


@wrong("tester", "averages every tensor, integers too, and returns float32", by="second")
def avg_integers_too(states):
    keys = _avg_checks(states)
    return {key: torch.stack([s[key].detach().double() for s in states]).mean(dim=0).float() for key in keys}


@wrong("tester", "accumulates in place into state 0's tensors (mutates the input)", by="second")
def avg_accumulates_into_first(states):
    keys = _avg_checks(states)
    averaged = {}
    for key in keys:
        first = states[0][key]
        if first.is_floating_point():
            total = first.detach()
            for s in states[1:]:
                total += s[key].detach()
            total /= len(states)
            averaged[key] = total
        else:
            if any(not torch.equal(s[key], first) for s in states[1:]):
                raise ValueError(f"{key} is not floating point and differs between the states: cannot average it")
            averaged[key] = first.clone()
    return averaged


# -- tester set 'third'


def _avg_core(states, *, dtype_sum=True, average_ints=False, check_keys=True):
    if not states:
        raise ValueError("states is empty: nothing to average")
    keys = list(states[0])
    if check_keys:
        for i, state in enumerate(states[1:], start=1):
            if list(state) != keys:
                differ = sorted(set(state) ^ set(keys))
                raise ValueError(
                    f"state {i} has other keys than state 0 (e.g. {differ[:3]}): not the same architecture"
                )
    averaged = {}
    for key in keys:
        tensors = [state[key] for state in states]
        first = tensors[0]
        for i, tensor in enumerate(tensors[1:], start=1):
            if tensor.shape != first.shape or tensor.dtype != first.dtype:
                raise ValueError(
                    f"{key}: state {i} has {tuple(tensor.shape)} {tensor.dtype}, state 0 has "
                    f"{tuple(first.shape)} {first.dtype}"
                )
        if average_ints:
            averaged[key] = torch.stack([t.detach().double() for t in tensors]).mean(dim=0).float()
            if first.is_floating_point():
                averaged[key] = averaged[key].to(first.dtype)
        elif first.is_floating_point():
            if dtype_sum:
                total = torch.stack([t.detach().double() for t in tensors]).sum(dim=0)
                averaged[key] = (total / len(tensors)).to(first.dtype)
            else:
                total = tensors[0].detach().clone()
                for t in tensors[1:]:
                    total = total + t.detach()
                averaged[key] = total / len(tensors)
        else:
            if any(not torch.equal(t, first) for t in tensors[1:]):
                raise ValueError(f"{key} is not floating point and differs between the states: cannot average it")
            averaged[key] = first.clone()
    return averaged


@wrong("tester", "summed in the tensors' own dtype (float16 loses precision / depends on order)", by="third")
def avg_low_precision(states):
    return _avg_core(states, dtype_sum=False)


@wrong("tester", "every tensor averaged, integer buffers included (they come back float32)", by="third")
def avg_ints(states):
    return _avg_core(states, average_ints=True)


@wrong("tester", "keys of the other states never compared with state 0's", by="third")
def avg_no_key_check(states):
    return _avg_core(states, check_keys=False)


@right("tester", by="third")
def avg_alt(states):
    if not states:
        raise ValueError("states is empty: nothing to average")
    ref = states[0]
    for i, s in enumerate(states):
        if set(s) != set(ref) or len(s) != len(ref):
            raise ValueError(f"state {i} has other keys")
    result = {}
    for key, first in ref.items():
        for i, s in enumerate(states):
            if s[key].shape != first.shape or s[key].dtype != first.dtype:
                raise ValueError(f"{key}: state {i} differs in shape or dtype")
        if torch.is_floating_point(first):
            acc = torch.zeros(first.shape, dtype=torch.float64)
            for s in states:
                acc += s[key].detach().to(torch.float64)
            result[key] = (acc / len(states)).to(first.dtype)
        else:
            for s in states:
                if not torch.equal(s[key], first):
                    raise ValueError(f"{key}: not floating point and differs")
            result[key] = first.clone()
    return result
