"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import math

from transformer_course.positional import check_positions

from . import wrong

# -- mutants


@wrong("mutant", "x.size(0) on a batch-first tensor")
def _batch_size_as_length(self, x, offset=0):
    return self.dropout(x + self.pe[: x.size(0)].to(x.dtype))  # x.size(0) is B, not T


@wrong("mutant", "sequence-first code: pe[:B] broadcast over positions")
def _sequence_first_code(self, x, offset=0):
    # code written for (T, B, D) inputs, where the table is (max_len, 1, D): every position gets pe[b]
    return self.dropout(x + self.pe[: x.size(0)].unsqueeze(1).to(x.dtype))


@wrong("mutant", "adds the whole table")
def _whole_table(self, x, offset=0):
    return self.dropout(x + self.pe.to(x.dtype))


@wrong("mutant", "table not added")
def _not_added(self, x, offset=0):
    return self.dropout(x)


@wrong("mutant", "offset ignored")
def _ignores_offset(self, x, offset=0):
    return self.dropout(x + self.pe[: x.shape[1]].to(x.dtype))  # always positions 0 … T-1


@wrong("mutant", "offset counted from the end")
def _offset_counted_from_the_end(self, x, offset=0):
    return self.dropout(x + self.pe[offset - x.shape[1] : offset or None].to(x.dtype))


@wrong("mutant", "no dropout")
def _no_dropout(self, x, offset=0):
    return x + self.pe[: x.shape[1]].to(x.dtype)


@wrong("mutant", "dropout on the table only")
def _dropout_on_table_only(self, x, offset=0):
    return x + self.dropout(self.pe[: x.shape[1]].to(x.dtype))


@wrong("mutant", "adds in place")
def _in_place(self, x, offset=0):
    x += self.pe[: x.shape[1]].to(x.dtype)
    return self.dropout(x)


@wrong("mutant", "float16 input promoted to float32")
def _dtype_promoted(self, x, offset=0):
    return self.dropout(x + self.pe[: x.shape[1]])  # float16 + float32 → float32


@wrong("mutant", "table rows 1..T instead of 0..T-1")
def _off_by_one(self, x, offset=0):
    return self.dropout(x + self.pe[1 : x.shape[1] + 1].to(x.dtype))


@wrong("mutant", "the table scaled by sqrt(d_model)", says="the table is multiplied by sqrt(d_model)")
def _table_rescaled(self, x, offset=0):
    table = self.pe[offset : offset + x.shape[1]] * math.sqrt(self.d_model)  # scaled like the embeddings
    return self.dropout(x + table.to(x.dtype))


# -- own mistakes and alternatives


@wrong("own", says="the positional table alone")
def _forward_table_only(self, x, offset=0):
    return self.dropout(self.pe[offset : offset + x.size(1)].to(x.dtype).expand_as(x))


@wrong("own", says="x is multiplied by")
def _forward_rescaled(self, x, offset=0):
    return self.dropout(x * math.sqrt(x.size(-1)) + self.pe[offset : offset + x.size(1)].to(x.dtype))


@wrong("own", says="the table is subtracted")
def _forward_subtracted(self, x, offset=0):
    return self.dropout(x - self.pe[offset : offset + x.size(1)].to(x.dtype))


# -- tester set 'first'


@wrong("tester", "seq_len = x.shape[0] (batch axis taken as positions)", by="first")
def ex02_2_batch_axis(self, x, offset=0):
    seq_len = x.shape[0]  # batch axis taken as positions
    table = self.pe[offset : offset + seq_len]
    return self.dropout(x + table.to(x.dtype))


@wrong("tester", "ignores offset (always rows 0…T-1)", by="first")
def ex02_2_ignores_offset(self, x, offset=0):
    seq_len = x.shape[1]
    table = self.pe[:seq_len]
    return self.dropout(x + table.to(x.dtype))


@wrong("tester", "dropout applied to x before adding the table, not to the sum", by="first")
def ex02_2_dropout_before_add(self, x, offset=0):
    seq_len = x.shape[1]
    table = self.pe[offset : offset + seq_len]
    return self.dropout(x) + table.to(x.dtype)


@wrong("tester", "x += table: modifies the caller's x", by="first")
def x02_2_adds_in_place(self, x, offset=0):
    x += self.pe[offset : offset + x.shape[1]].to(x.dtype)  # modifies the caller's x
    return self.dropout(x)


# -- tester set 'second'


@wrong("tester", "sequence length read from x.shape[0] (batch axis)", by="second")
def posenc_batch_axis(self, x, offset=0):
    check_positions(x, offset, self.d_model, self.max_len)
    seq_len = x.shape[0]
    table = self.pe[offset : offset + seq_len]
    return self.dropout(x + table.to(x.dtype))


@wrong("tester", "offset argument ignored (always rows 0..T-1)", by="second")
def posenc_offset_ignored(self, x, offset=0):
    check_positions(x, offset, self.d_model, self.max_len)
    seq_len = x.shape[1]
    table = self.pe[:seq_len]
    return self.dropout(x + table.to(x.dtype))


@wrong("tester", "table not cast to x's dtype (half input becomes float32)", by="second")
def posenc_no_dtype(self, x, offset=0):
    check_positions(x, offset, self.d_model, self.max_len)
    seq_len = x.shape[1]
    table = self.pe[offset : offset + seq_len]
    return self.dropout(x + table)


# -- tester set 'third'


@wrong("tester", "seq_len read from x.shape[0] (the batch axis)", by="third")
def posenc_batch_axis_third(self, x, offset=0):
    check_positions(x, offset, self.d_model, self.max_len)
    seq_len = x.shape[0]
    table = self.pe[offset : offset + seq_len]
    return self.dropout(x + table.to(x.dtype))


@wrong("tester", "offset ignored: always rows 0…T-1", by="third")
def posenc_no_offset(self, x, offset=0):
    check_positions(x, offset, self.d_model, self.max_len)
    seq_len = x.shape[1]
    table = self.pe[:seq_len]
    return self.dropout(x + table.to(x.dtype))


@wrong("tester", "dropout forgotten", by="third")
def posenc_no_dropout(self, x, offset=0):
    check_positions(x, offset, self.d_model, self.max_len)
    seq_len = x.shape[1]
    table = self.pe[offset : offset + seq_len]
    return x + table.to(x.dtype)
