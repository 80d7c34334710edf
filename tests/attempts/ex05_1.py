"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch.nn.functional as F

from . import right, wrong

# -- mutants


@wrong("mutant", "ReLU missing")
def _ffn_no_relu(self, x):
    return self.linear2(self.dropout(self.linear1(x)))


@wrong("mutant", "GELU instead of ReLU")
def _ffn_gelu(self, x):
    return self.linear2(self.dropout(F.gelu(self.linear1(x))))


@wrong("mutant", "a second ReLU after linear2")
def _ffn_relu_at_the_end_too(self, x):
    return self.linear2(self.dropout(self.linear1(x).relu())).relu()


@wrong("mutant", "dropout on the output instead of after the ReLU")
def _ffn_dropout_on_output(self, x):
    return self.dropout(self.linear2(self.linear1(x).relu()))


@wrong("mutant", "dropout never applied")
def _ffn_no_dropout(self, x):
    return self.linear2(self.linear1(x).relu())


@wrong("mutant", "self.dropout never called", says="self.dropout is never applied")
def _ffn_dropout_forgotten(self, x):
    return self.linear2(self.activation(self.linear1(x)))


@wrong("mutant", "ReLU applied to the input")
def _ffn_relu_on_input(self, x):
    return self.linear2(self.dropout(self.linear1(x.relu())))


# -- own mistakes and alternatives


@wrong("own", says="after the second linear layer")
def _ffn_relu_last(self, x):
    return self.linear2(self.dropout(self.linear1(x))).relu()


@wrong("own", says="x is added to the output")
def _ffn_plus_x(self, x):
    return x + self.linear2(self.dropout(self.activation(self.linear1(x))))


@wrong("own", says="biases are left out")
def _ffn_no_biases(self, x):
    hidden = self.dropout(self.activation(F.linear(x, self.linear1.weight)))
    return F.linear(hidden, self.linear2.weight)


@wrong("own", says="dropout is applied to the input")
def _ffn_dropout_on_x(self, x):
    return self.linear2(self.activation(self.linear1(self.dropout(x))))


# -- tester set 'first'


@wrong("tester", "dropout on the output instead of the hidden features", by="first")
def ex05_1_dropout_on_output(self, x):
    hidden = self.activation(self.linear1(x))
    return self.dropout(self.linear2(hidden))


@wrong("tester", "hard-coded F.relu (ignores self.activation)", by="first")
def ex05_1_always_relu(self, x):
    hidden = self.dropout(F.relu(self.linear1(x)))
    return self.linear2(hidden)


@wrong("tester", "forgot the activation", by="first")
def ex05_1_no_activation(self, x):
    return self.linear2(self.dropout(self.linear1(x)))


@right("tester", by="first")
def ex05_1_alt_functional(self, x):
    h = F.linear(x, self.linear1.weight, self.linear1.bias)
    h = self.dropout(self.activation(h))
    return F.linear(h, self.linear2.weight, self.linear2.bias)


@wrong("tester", "dropout before the activation (same for ReLU, not for swish/GELU)", by="first")
def x05_1_dropout_before_activation(self, x):
    return self.linear2(self.activation(self.dropout(self.linear1(x))))


# -- tester set 'second'


@wrong("tester", "dropout after linear2 instead of on the hidden layer", by="second")
def ffn_dropout_after_out(self, x):
    hidden = self.activation(self.linear1(x))
    return self.dropout(self.linear2(hidden))


@wrong("tester", "activation applied after linear2 as well", by="second")
def ffn_activation_twice(self, x):
    hidden = self.dropout(self.activation(self.linear1(x)))
    return self.activation(self.linear2(hidden))


@wrong("tester", "hard-coded F.relu, ignoring the configured self.activation", by="second")
def ffn_hardcoded_relu(self, x):
    hidden = self.dropout(F.relu(self.linear1(x)))
    return self.linear2(hidden)


# -- tester set 'third'


@wrong("tester", "activation also applied after linear2", by="third")
def ffn_act_output(self, x):
    hidden = self.dropout(self.activation(self.linear1(x)))
    return self.activation(self.linear2(hidden))


@wrong("tester", "dropout on the output instead of the hidden layer", by="third")
def ffn_dropout_output(self, x):
    hidden = self.activation(self.linear1(x))
    return self.dropout(self.linear2(hidden))


@wrong("tester", "hard-coded F.relu instead of self.activation", by="third")
def ffn_relu(self, x):
    hidden = self.dropout(F.relu(self.linear1(x)))
    return self.linear2(hidden)


@right("tester", by="third")
def ffn_alt(self, x):
    h = F.linear(x, self.linear1.weight, self.linear1.bias)
    h = self.dropout(self.activation(h))
    return F.linear(h, self.linear2.weight, self.linear2.bias)
