"""Wrong answers for chapter 02: the sinusoidal table, the batch-first pitfall, the rotation M_k."""

from __future__ import annotations

import math

import torch

# -- ex02_1: sinusoidal_positional_encoding ---------------------------------------------------


def _angles(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(D/2),)
    return position / 10000 ** (two_i / d_model)  # (max_len, ceil(D/2))


def _table(sin, cos, max_len, d_model):
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = sin
    table[:, 1::2] = cos[:, : d_model // 2]
    return table.float()


def _sin_cos_swapped(max_len, d_model):
    angle = _angles(max_len, d_model)
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.cos(angle)
    table[:, 1::2] = torch.sin(angle[:, : d_model // 2])
    return table.float()


def _halves(max_len, d_model):
    angle = _angles(max_len, d_model)
    return torch.cat([torch.sin(angle), torch.cos(angle[:, : d_model // 2])], dim=1).float()


def _column_index_exponent(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float64)[:, None]
    column = torch.arange(d_model, dtype=torch.float64)
    angle = position / 10000 ** (column / d_model)  # odd columns get the next pair's frequency
    table = torch.where(column.long() % 2 == 0, torch.sin(angle), torch.cos(angle))
    return table.float()


def _i_instead_of_2i(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float64)[:, None]
    i = torch.arange((d_model + 1) // 2, dtype=torch.float64)
    angle = position / 10000 ** (i / d_model)
    return _table(torch.sin(angle), torch.cos(angle), max_len, d_model)


def _odd_d_model_crash(max_len, d_model):
    angle = _angles(max_len, d_model)
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)  # shape error when d_model is odd
    return table


def _positions_from_one(max_len, d_model):
    angle = _angles(max_len + 1, d_model)[1:]
    return _table(torch.sin(angle), torch.cos(angle), max_len, d_model)


def _float64(max_len, d_model):
    angle = _angles(max_len, d_model)
    return _table(torch.sin(angle), torch.cos(angle), max_len, d_model).double()


def _base_1000(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = position / 1000 ** (two_i / d_model)
    return _table(torch.sin(angle), torch.cos(angle), max_len, d_model)


# -- ex02_2: PositionalEncoding.forward (batch-first) ------------------------------------------


def _batch_size_as_length(self, x, offset=0):
    return self.dropout(x + self.pe[: x.size(0)].to(x.dtype))  # x.size(0) is B, not T


def _sequence_first_code(self, x, offset=0):
    # code written for (T, B, D) inputs, where the table is (max_len, 1, D): every position gets pe[b]
    return self.dropout(x + self.pe[: x.size(0)].unsqueeze(1).to(x.dtype))


def _whole_table(self, x, offset=0):
    return self.dropout(x + self.pe.to(x.dtype))


def _not_added(self, x, offset=0):
    return self.dropout(x)


def _ignores_offset(self, x, offset=0):
    return self.dropout(x + self.pe[: x.shape[1]].to(x.dtype))  # always positions 0 … T-1


def _offset_counted_from_the_end(self, x, offset=0):
    return self.dropout(x + self.pe[offset - x.shape[1] : offset or None].to(x.dtype))


def _no_dropout(self, x, offset=0):
    return x + self.pe[: x.shape[1]].to(x.dtype)


def _dropout_on_table_only(self, x, offset=0):
    return x + self.dropout(self.pe[: x.shape[1]].to(x.dtype))


def _in_place(self, x, offset=0):
    x += self.pe[: x.shape[1]].to(x.dtype)
    return self.dropout(x)


def _dtype_promoted(self, x, offset=0):
    return self.dropout(x + self.pe[: x.shape[1]])  # float16 + float32 → float32


def _off_by_one(self, x, offset=0):
    return self.dropout(x + self.pe[1 : x.shape[1] + 1].to(x.dtype))


# -- ex02_3: relative_position_map --------------------------------------------------------------


def _blocks(k, d_model, sign=1.0, exponent_step=2, cos_only=False):
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    for two_i in range(0, d_model, 2):
        w = 1 / 10000 ** ((two_i * exponent_step // 2) / d_model)
        c, s = math.cos(w * k), 0.0 if cos_only else sign * math.sin(w * k)
        m[two_i, two_i], m[two_i, two_i + 1], m[two_i + 1, two_i], m[two_i + 1, two_i + 1] = c, s, -s, c
    return m.float()


def _wrong_direction(k, d_model):
    return _blocks(k, d_model, sign=-1.0)


def _no_sin_terms(k, d_model):
    return _blocks(k, d_model, cos_only=True)


def _wrong_frequency(k, d_model):
    return _blocks(k, d_model, exponent_step=1)


def _identity(k, d_model):
    return torch.eye(d_model)


def _shift_matrix(k, d_model):
    return torch.roll(torch.eye(d_model), shifts=k, dims=0)  # moves columns around; not a rotation


MUTANTS = {
    "ex02_1": [
        ("sin and cos swapped", _sin_cos_swapped),
        ("[sin | cos] halves instead of interleaved", _halves),
        ("column index j in the exponent", _column_index_exponent),
        ("i instead of 2i in the exponent", _i_instead_of_2i),
        ("crashes on an odd d_model", _odd_d_model_crash),
        ("positions start at 1", _positions_from_one),
        ("returns float64", _float64),
        ("base 1000 instead of 10000", _base_1000),
    ],
    "ex02_2": [
        ("x.size(0) on a batch-first tensor", _batch_size_as_length),
        ("sequence-first code: pe[:B] broadcast over positions", _sequence_first_code),
        ("adds the whole table", _whole_table),
        ("table not added", _not_added),
        ("no dropout", _no_dropout),
        ("dropout on the table only", _dropout_on_table_only),
        ("adds in place", _in_place),
        ("float16 input promoted to float32", _dtype_promoted),
        ("table rows 1..T instead of 0..T-1", _off_by_one),
        ("offset ignored", _ignores_offset),
        ("offset counted from the end", _offset_counted_from_the_end),
    ],
    "ex02_3": [
        ("rotates the wrong way (transpose)", _wrong_direction),
        ("no sin terms", _no_sin_terms),
        ("i instead of 2i in the frequency", _wrong_frequency),
        ("identity (ignores k)", _identity),
        ("a shift matrix", _shift_matrix),
    ],
}
