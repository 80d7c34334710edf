"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

from transformer_course.subwords import _check_words

from . import wrong

# -- mutants


def _bpe(words, n_merges, count, choose, replace):
    """Byte-pair merges with one step swapped: ``count(segmented, words)``, ``choose(counts, age)``,
    ``replace(symbols, pair)``."""
    segmented = {word: list(word) for word in words}
    age = {char: ord(char) for word in words for char in word}
    merges = []
    while len(merges) < n_merges:
        counts = count(segmented, words)
        if not counts:
            break
        best = choose(counts, age)
        age.setdefault(best[0] + best[1], 0x110000 + len(merges))
        merges.append(best)
        for word, symbols in segmented.items():
            segmented[word] = replace(symbols, best)
    return merges


def _weighted(segmented, words):
    counts = {}
    for word, symbols in segmented.items():
        for pair in zip(symbols[:-1], symbols[1:], strict=True):
            counts[pair] = counts.get(pair, 0) + words[word]
    return counts


def _once_per_word_type(segmented, words):
    return _weighted(segmented, dict.fromkeys(words, 1))


def _non_overlapping(segmented, words):
    counts = {}
    for word, symbols in segmented.items():
        i = 0
        while i < len(symbols) - 1:
            pair = (symbols[i], symbols[i + 1])
            counts[pair] = counts.get(pair, 0) + words[word]
            i += 2 if i + 2 < len(symbols) and symbols[i + 2] == symbols[i + 1] == symbols[i] else 1
    return counts


def _older_first(counts, age):
    return min(counts, key=lambda pair: (-counts[pair], age[pair[0]], age[pair[1]]))


def _alphabetical_ties(counts, age):
    return min(counts, key=lambda pair: (-counts[pair], pair))


def _first_seen_ties(counts, age):
    return max(counts, key=counts.get)


def _replace_all(symbols, pair):
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(pair[0] + pair[1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def _replace_first(symbols, pair):
    for i in range(len(symbols) - 1):
        if (symbols[i], symbols[i + 1]) == pair:
            return [*symbols[:i], pair[0] + pair[1], *symbols[i + 2 :]]
    return symbols


def _mutant(count=_weighted, choose=_older_first, replace=_replace_all):
    return lambda words, n_merges: _bpe(words, n_merges, count, choose, replace)


_counts_each_pair_once_per_word_type_not_ = wrong(
    "mutant", "counts each pair once per word type, not weighted by frequency"
)(_mutant(count=_once_per_word_type))
_counts_aaa_as_holding_a_a_once = wrong("mutant", "counts 'aaa' as holding (a, a) once")(
    _mutant(count=_non_overlapping)
)
_merges_only_the_first_occurrence_in_a_wo = wrong("mutant", "merges only the first occurrence in a word")(
    _mutant(replace=_replace_first)
)
_breaks_ties_alphabetically = wrong("mutant", "breaks ties alphabetically")(_mutant(choose=_alphabetical_ties))
_breaks_ties_by_the_first_pair_counted = wrong("mutant", "breaks ties by the first pair counted")(
    _mutant(choose=_first_seen_ties)
)


# -- own mistakes and alternatives


def _bpe_learner(words, n_merges, pick, merge):
    symbols_of = {word: list(word) for word in words}
    age = {c: ord(c) for word in words for c in word}
    merges = []
    for _ in range(n_merges):
        counts = {}
        for word, symbols in symbols_of.items():
            for pair in zip(symbols[:-1], symbols[1:], strict=True):
                counts[pair] = counts.get(pair, 0) + words[word]
        if not counts:
            break
        best = pick(counts, age)
        age.setdefault(best[0] + best[1], 0x110000 + len(merges))
        merges.append(best)
        symbols_of = {word: merge(symbols, best) for word, symbols in symbols_of.items()}
    return merges


def _merge_right(symbols, pair):
    out, i = [], len(symbols) - 1
    while i >= 0:
        if i > 0 and (symbols[i - 1], symbols[i]) == pair:
            out.insert(0, pair[0] + pair[1])
            i -= 2
        else:
            out.insert(0, symbols[i])
            i -= 1
    return out


def _older(counts, age):
    return min(counts, key=lambda p: (-counts[p], age[p[0]], age[p[1]]))


@wrong("own", says="ties go to the newer symbols")
def _bpe_newer_ties(words, n_merges):
    return _bpe_learner(words, n_merges, lambda c, age: min(c, key=lambda p: (-c[p], -age[p[0]], -age[p[1]])),
                        _replace_all)  # fmt: skip


@wrong("own", says="the pair seen last")
def _bpe_last_seen_ties(words, n_merges):
    return _bpe_learner(words, n_merges, lambda c, age: sorted(c.items(), key=lambda kv: kv[1])[-1][0], _replace_all)


@wrong("own", says="merged from the right")
def _bpe_merged_from_the_right(words, n_merges):
    return _bpe_learner(words, n_merges, _older, _merge_right)


# -- tester set 'first'


def _bpe_first(words, n_merges, weighted=True, tie=None, extra=0):
    segmented = {word: list(word) for word in words}
    age = {char: ord(char) for word in words for char in word}
    merges = []
    while len(merges) < n_merges + extra:
        counts = {}
        for word, symbols in segmented.items():
            for pair in zip(symbols[:-1], symbols[1:], strict=True):
                counts[pair] = counts.get(pair, 0) + (words[word] if weighted else 1)
        if not counts:
            break
        if tie is None:
            best = min(counts, key=lambda pair: (-counts[pair], age[pair[0]], age[pair[1]]))
        else:
            best = min(counts, key=lambda pair: (-counts[pair], pair))
        joined = best[0] + best[1]
        age.setdefault(joined, 0x110000 + len(merges))
        merges.append(best)
        for symbols in segmented.values():
            i = 0
            while i < len(symbols) - 1:
                if (symbols[i], symbols[i + 1]) == best:
                    symbols[i : i + 2] = [joined]
                i += 1
    return merges


@wrong("tester", "pairs counted once per word (ignores the word counts)", by="first")
def ex12_3_unweighted(words, n_merges):
    return _bpe_first(words, n_merges, weighted=False)


@wrong("tester", "ties broken alphabetically, not by symbol age", by="first")
def ex12_3_alphabetical_ties(words, n_merges):
    return _bpe_first(words, n_merges, tie="alpha")


@wrong("tester", "off by one: learns n_merges + 1 merges", by="first")
def ex12_3_one_extra(words, n_merges):
    return _bpe_first(words, n_merges, extra=1)  # while len(merges) <= n_merges


@wrong("tester", "merges only the first occurrence of the pair in each word", by="first")
def x09_3_first_occurrence_only(words, n_merges):
    segmented = {word: list(word) for word in words}
    age = {char: ord(char) for word in words for char in word}
    merges = []
    while len(merges) < n_merges:
        counts = {}
        for word, symbols in segmented.items():
            for pair in zip(symbols[:-1], symbols[1:], strict=True):
                counts[pair] = counts.get(pair, 0) + words[word]
        if not counts:
            break
        best = min(counts, key=lambda pair: (-counts[pair], age[pair[0]], age[pair[1]]))
        joined = best[0] + best[1]
        age.setdefault(joined, 0x110000 + len(merges))
        merges.append(best)
        for symbols in segmented.values():
            for i in range(len(symbols) - 1):
                if (symbols[i], symbols[i + 1]) == best:
                    symbols[i : i + 2] = [joined]
                    break  # only the first occurrence in each word
    return merges


# -- tester set 'second'


def _bpe_second(words, n_merges, choose, weighted=True, distinct=False):
    _check_words(words, n_merges)
    segmented = {word: list(word) for word in words}
    age = {char: ord(char) for word in words for char in word}
    merges = []
    while len(merges) < n_merges:
        counts = {}
        for word, symbols in segmented.items():
            pairs = list(zip(symbols[:-1], symbols[1:], strict=False))
            if distinct:
                pairs = list(dict.fromkeys(pairs))
            for pair in pairs:
                counts[pair] = counts.get(pair, 0) + (words[word] if weighted else 1)
        if not counts:
            break
        best = choose(counts, age)
        joined = best[0] + best[1]
        age.setdefault(joined, 0x110000 + len(merges))
        merges.append(best)
        for symbols in segmented.values():
            i = 0
            while i < len(symbols) - 1:
                if (symbols[i], symbols[i + 1]) == best:
                    symbols[i : i + 2] = [joined]
                i += 1
    return merges


def _by_age(counts, age):
    return min(counts, key=lambda pair: (-counts[pair], age[pair[0]], age[pair[1]]))


@wrong("tester", "ties broken alphabetically instead of by symbol age", by="second")
def bpe_alphabetical_ties(words, n_merges):
    return _bpe_second(words, n_merges, lambda counts, age: min(counts, key=lambda p: (-counts[p], p)))


@wrong("tester", "pair counts not weighted by word counts", by="second")
def bpe_unweighted(words, n_merges):
    return _bpe_second(words, n_merges, _by_age, weighted=False)


@wrong("tester", "each pair counted once per word ('aaa' has (a,a) once)", by="second")
def bpe_distinct_pairs(words, n_merges):
    return _bpe_second(words, n_merges, _by_age, distinct=True)


# -- tester set 'third'


def _bpe_core(words, n_merges, *, weighted=True, tie_age=True, stop=True):
    _check_words(words, n_merges)
    segmented = {word: list(word) for word in words}
    age = {char: ord(char) for word in words for char in word}
    merges = []
    while len(merges) < n_merges:
        counts = {}
        for word, symbols in segmented.items():
            for pair in zip(symbols[:-1], symbols[1:], strict=False):
                counts[pair] = counts.get(pair, 0) + (words[word] if weighted else 1)
        if stop and not counts:
            break
        if tie_age:
            best = min(counts, key=lambda pair: (-counts[pair], age[pair[0]], age[pair[1]]))
        else:
            best = max(counts, key=counts.get)
        joined = best[0] + best[1]
        age.setdefault(joined, 0x110000 + len(merges))
        merges.append(best)
        for symbols in segmented.values():
            i = 0
            while i < len(symbols) - 1:
                if (symbols[i], symbols[i + 1]) == best:
                    symbols[i : i + 2] = [joined]
                i += 1
    return merges


@wrong("tester", "pairs counted once per word, not weighted by the word's count", by="third")
def bpe_unweighted_third(words, n_merges):
    return _bpe_core(words, n_merges, weighted=False)


@wrong("tester", "ties broken by first-seen pair (max(counts, key=counts.get))", by="third")
def bpe_first_seen(words, n_merges):
    return _bpe_core(words, n_merges, tie_age=False)


@wrong("tester", "no early stop when no pair is left (min of an empty dict)", by="third")
def bpe_no_stop(words, n_merges):
    return _bpe_core(words, n_merges, stop=False)
