"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import right, wrong

# -- mutants


@wrong("mutant", "the gate on w3", says="the gate is on the wrong projection")
def _gate_on_w3(self, x):
    return self.w2(self.dropout(F.silu(self.w3(x)) * self.w1(x)))


@wrong("mutant", "ReLU instead of silu", says="uses ReLU")
def _relu_gate(self, x):
    return self.w2(self.dropout(F.relu(self.w1(x)) * self.w3(x)))


@wrong("mutant", "sigmoid instead of silu (GLU)")
def _sigmoid_gate(self, x):
    return self.w2(self.dropout(torch.sigmoid(self.w1(x)) * self.w3(x)))


@wrong("mutant", "silu on both projections")
def _silu_on_both(self, x):
    return self.w2(self.dropout(F.silu(self.w1(x)) * F.silu(self.w3(x))))


@wrong("mutant", "gate added, not multiplied")
def _gate_added(self, x):
    return self.w2(self.dropout(F.silu(self.w1(x)) + self.w3(x)))


@wrong("mutant", "no dropout")
def _no_dropout(self, x):
    return self.w2(F.silu(self.w1(x)) * self.w3(x))


@wrong("mutant", "dropout on the output")
def _dropout_on_output(self, x):
    return self.dropout(self.w2(F.silu(self.w1(x)) * self.w3(x)))


@wrong("mutant", "dropout on the input x", says="applies self.dropout to the input x")
def _dropout_on_input(self, x):
    x = self.dropout(x)
    return self.w2(F.silu(self.w1(x)) * self.w3(x))


# -- own mistakes and alternatives


@wrong("own", says="uses GELU")
def _geglu(self, x):
    return self.w2(self.dropout(F.gelu(self.w1(x)) * self.w3(x)))


@wrong("own", says="silu of the product")
def _silu_of_the_product(self, x):
    return self.w2(self.dropout(F.silu(self.w1(x) * self.w3(x))))


@wrong("own", says="forgets the value")
def _value_forgotten(self, x):
    return self.w2(self.dropout(F.silu(self.w1(x))))


# -- tester set 'first'


@wrong("tester", "silu on W3 x, W1 x as value (gate and value swapped)", by="first")
def ex13_4_gate_swapped(self, x):
    hidden = F.silu(self.w3(x)) * self.w1(x)
    return self.w2(self.dropout(hidden))


@wrong("tester", "sigmoid instead of silu (plain GLU)", by="first")
def ex13_4_sigmoid(self, x):
    hidden = torch.sigmoid(self.w1(x)) * self.w3(x)
    return self.w2(self.dropout(hidden))


@wrong("tester", "dropout on the output instead of the hidden features", by="first")
def ex13_4_dropout_on_output(self, x):
    hidden = F.silu(self.w1(x)) * self.w3(x)
    return self.dropout(self.w2(hidden))


@right("tester", by="first")
def ex13_4_alt_manual(self, x):
    gate = x @ self.w1.weight.T
    hidden = gate * torch.sigmoid(gate) * (x @ self.w3.weight.T)
    return self.dropout(hidden) @ self.w2.weight.T


@wrong("tester", "dropout on the gate's pre-activation only", by="first")
def x10_4_dropout_on_gate(self, x):
    hidden = F.silu(self.dropout(self.w1(x))) * self.w3(x)
    return self.w2(hidden)


# -- tester set 'second'


@wrong("tester", "silu applied to w3 instead of w1 (gate swapped)", by="second")
def swiglu_gate_swapped(self, x):
    hidden = self.w1(x) * F.silu(self.w3(x))
    return self.w2(self.dropout(hidden))


@wrong("tester", "sigmoid gate instead of silu (GLU, not SwiGLU)", by="second")
def swiglu_sigmoid(self, x):
    hidden = torch.sigmoid(self.w1(x)) * self.w3(x)
    return self.w2(self.dropout(hidden))


@wrong("tester", "dropout after w2 instead of on the hidden layer", by="second")
def swiglu_dropout_after_w2(self, x):
    hidden = F.silu(self.w1(x)) * self.w3(x)
    return self.dropout(self.w2(hidden))


# -- tester set 'third'


@wrong("tester", "gate on the wrong projection: silu(w3(x)) * w1(x)", by="third")
def swiglu_swapped(self, x):
    hidden = F.silu(self.w3(x)) * self.w1(x)
    return self.w2(self.dropout(hidden))


@wrong("tester", "sigmoid instead of silu (GLU, not SwiGLU)", by="third")
def swiglu_sigmoid_third(self, x):
    hidden = torch.sigmoid(self.w1(x)) * self.w3(x)
    return self.w2(self.dropout(hidden))


@wrong("tester", "dropout after w2 instead of before", by="third")
def swiglu_dropout_after(self, x):
    hidden = F.silu(self.w1(x)) * self.w3(x)
    return self.dropout(self.w2(hidden))
