"""The linear-time matcher of subscription regexes and ListTransactions patterns
(coordinator/group/consumer/regex.py): the same answers as Python's backtracking `re.fullmatch` on the
syntax both accept, with its step cache (the lazy DFA) warm or cold."""

from __future__ import annotations

import random
import re

import pytest

from coordinator.group.consumer.regex import DFA_CACHE_MAX, compile_regex

PATTERNS = [
    r"a*b",
    r"(ab|a)*",
    r"\bab\b.*",
    r"a.b$",
    r"^a|b",
    r"[a-c]+\Bb",
    r"(a|b)*a(a|b){3}",
    r"x?\w+\b",
    r"a{2,4}b?",
    r"(?i)A[B_]*",
    r"[^ ]+ [^ ]*",
    r"\d*\s?x",
    r"",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_matches_like_python_re_with_a_reused_compiled_pattern(pattern):
    rng = random.Random(pattern)
    compiled, reference = compile_regex(pattern), re.compile(pattern)
    for _ in range(2000):
        text = "".join(rng.choice("ab c_x1A") for _ in range(rng.randint(0, 9)))
        assert compiled.fullmatch(text) == bool(reference.fullmatch(text)), text


def test_the_step_cache_is_bounded_and_answers_stay_the_same_after_it_is_dropped():
    # (a|b)*a(a|b){14} has 2^15 reachable state sets: more than the cache keeps.
    pattern = r"(a|b)*a(a|b){14}"
    compiled, reference = compile_regex(pattern), re.compile(pattern)
    rng = random.Random(7)
    for _ in range(30):
        text = "".join(rng.choice("ab") for _ in range(2000))
        assert compiled.fullmatch(text) == bool(reference.fullmatch(text))
        assert len(compiled._steps) <= DFA_CACHE_MAX + len(text)


def test_a_long_text_of_few_characters_is_matched_from_the_cache():
    # 59 alternatives under a star: a plain NFA simulation visits ~1800 instructions per character.
    compiled = compile_regex("(" + "|".join("a" * i for i in range(1, 60)) + ")*b")
    assert not compiled.fullmatch("a" * 32767)
    assert len(compiled._steps) < 200  # steps computed, the rest were lookups
    assert compiled.fullmatch("a" * 32766 + "b")
