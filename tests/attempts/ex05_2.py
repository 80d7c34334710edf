"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

from . import right, wrong

# -- mutants


@wrong("mutant", "always post-LN (norm_first ignored)")
def _always_post_ln(x, sublayer, norm, dropout, norm_first):
    return norm(x + dropout(sublayer(x)))


@wrong("mutant", "always pre-LN (norm_first ignored)")
def _always_pre_ln(x, sublayer, norm, dropout, norm_first):
    return x + dropout(sublayer(norm(x)))


@wrong("mutant", "norm_first inverted")
def _flag_inverted(x, sublayer, norm, dropout, norm_first):
    if not norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


@wrong("mutant", "norm on the sub-layer's output")
def _norm_on_the_branch(x, sublayer, norm, dropout, norm_first):
    # the norm put on the sub-layer's output instead of the sum (or the input)
    return x + dropout(norm(sublayer(x)))


@wrong("mutant", "pre-LN that also normalises the sum")
def _pre_ln_normalising_the_sum_too(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return norm(x + dropout(sublayer(norm(x))))
    return norm(x + dropout(sublayer(x)))


@wrong("mutant", "the sub-layer runs twice (once to look at it)", says="the sub-layer ran 2 times")
def _sublayer_run_twice(x, sublayer, norm, dropout, norm_first):
    h = norm(x) if norm_first else x
    if sublayer(h).isnan().any():  # a look at the sub-layer's output costs a whole second run
        raise ValueError("the sub-layer gave NaN")
    branch = dropout(sublayer(h))
    return x + branch if norm_first else norm(x + branch)


@wrong("mutant", "residual connection missing")
def _no_residual(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return dropout(sublayer(norm(x)))
    return norm(dropout(sublayer(x)))


@wrong("mutant", "dropout on the sum")
def _dropout_on_the_sum(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return dropout(x + sublayer(norm(x)))
    return norm(dropout(x + sublayer(x)))


@wrong("mutant", "dropout missing")
def _no_dropout(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return x + sublayer(norm(x))
    return norm(x + sublayer(x))


# -- own mistakes and alternatives


@wrong("own", says="the norm is applied in the wrong place")
def _residual_from_the_normed_x(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        x = norm(x)
        return x + dropout(sublayer(x))
    return norm(x + dropout(sublayer(x)))


@wrong("own", says="the norm is applied in the wrong place")
def _post_ln_without_norm(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return x + dropout(sublayer(x))


@wrong("own", says="apply it to the sub-layer's output only")
def _dropout_after_the_norm(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return dropout(norm(x + sublayer(x)))


# -- tester set 'first'


@wrong("tester", "post-LN as x + norm(dropout(sublayer(x))) (norm on the branch only)", by="first")
def ex05_2_post_ln_norm_on_branch(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return x + norm(dropout(sublayer(x)))


@wrong("tester", "norm_first branches swapped (post-LN for True, pre-LN for False)", by="first")
def ex05_2_orders_swapped(x, sublayer, norm, dropout, norm_first):
    if not norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


@wrong("tester", "pre-LN adds the normalised input as the shortcut", by="first")
def ex05_2_pre_ln_adds_normed(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        h = norm(x)
        return h + dropout(sublayer(h))
    return norm(x + dropout(sublayer(x)))


@wrong("tester", "dropout on the sum x + sublayer(x), not on the sub-layer's output", by="first")
def x05_2_dropout_on_sum(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return dropout(x + sublayer(norm(x)))
    return norm(dropout(x + sublayer(x)))


# -- tester set 'second'


@wrong("tester", "norm_first inverted (pre-LN and post-LN swapped)", by="second")
def residual_swapped(x, sublayer, norm, dropout, norm_first):
    if not norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


@wrong("tester", "pre-LN normalises the sub-layer's output instead of its input", by="second")
def residual_prenorm_on_output(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return x + dropout(norm(sublayer(x)))
    return norm(x + dropout(sublayer(x)))


@wrong("tester", "post-LN: dropout applied to the residual sum x + sublayer(x)", by="second")
def residual_dropout_on_sum(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(dropout(x + sublayer(x)))


@right("tester", by="second")
def residual_alt(x, sublayer, norm, dropout, norm_first):
    inner = norm(x) if norm_first else x
    out = x + dropout(sublayer(inner))
    return out if norm_first else norm(out)


# -- tester set 'third'


@wrong("tester", "norm_first meaning inverted (pre-LN and post-LN swapped)", by="third")
def residual_swapped_third(x, sublayer, norm, dropout, norm_first):
    if not norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


@wrong("tester", "dropout forgotten in the post-LN branch", by="third")
def residual_post_no_dropout(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + sublayer(x))


@wrong("tester", "pre-LN adds the normalised x (h = norm(x); h + sublayer(h))", by="third")
def residual_pre_adds_normed(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        x = norm(x)
        return x + dropout(sublayer(x))
    return norm(x + dropout(sublayer(x)))


@right("tester", by="third")
def residual_alt_third(x, sublayer, norm, dropout, norm_first):
    inp = norm(x) if norm_first else x
    out = x + dropout(sublayer(inp))
    return out if norm_first else norm(out)
