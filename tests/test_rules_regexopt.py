"""compile_pattern: the rules' regexes with factored case-insensitive alternations are the same regexes."""

from __future__ import annotations

import random
import re

import pytest

from deid_core.engine.regexopt import compile_pattern
from deid_core.engine.rules import load_rules
from deid_core.synthetic import REALISTIC, generate_notes

# Characters that match ASCII letters case-insensitively besides their two cases.
ODD_CASES = "\u0130\u0131\u017f\u212a"

CASES = [
    (r"(?i:son|sister|sons|wife|s\.o\.?|s/o|sib(?:ling)?s?|w)", ["Sons and SISTER", "\u017fon", "s.o. sib", "w wife"]),
    (r"(?i:\b(?:kid|kids|k\.|ki)\b)", ["KIDS kid \u212aid k. ki"]),
    (r"(?i:(?:in|is|it|\u0130t)[a-z]*)", ["\u0130t \u0131s IN it"]),
    (r"(?i:a|ab|abc|b|ba|(?:c|cd)|[x-z]q|d)+", ["abcbadcdzqxq ABC"]),
    (r"(?!(?i:by|with|to|the|and|or|per)\b)[A-Za-z]+", ["By Tom with Ann and Perry to THE Theo"]),
    (r"(?i:(ab)|(ac)|(?P<n>ad)|ae)(?(1)x|y)", ["abx aby acy ADY aey"]),
    # look-arounds before a one-character test get that test in front of them
    (r"(?<![\w.])(?!(?i:by|the|and)\b)(?:[A-Z][a-z]+)(?:\s+(?!(?i:of|and)\b)(?i:[a-z]+))+", ["By The Bay and Hull Of Ice"]),
    (r"\b(?!(?:ab|cd)\b)(?a:\w+)|(?=(?i:ab))(?!abc)(?i:[a-c]+)", ["ab ABC abd cd cde \u212ab"]),
]


def same(a: re.Pattern[str], b: re.Pattern[str], text: str) -> None:
    got = [(m.span(), m.groups(), m.groupdict()) for m in a.finditer(text)]
    want = [(m.span(), m.groups(), m.groupdict()) for m in b.finditer(text)]
    assert got == want


@pytest.mark.parametrize(("source", "texts"), CASES)
def test_same_matches_as_re(source: str, texts: list[str]) -> None:
    fast, plain = compile_pattern(source), re.compile(source)
    assert (fast.pattern, fast.flags, fast.groups, fast.groupindex) == (
        plain.pattern, plain.flags, plain.groups, plain.groupindex,
    )
    for text in texts:
        same(fast, plain, text)
        same(fast, plain, text.upper())
        same(fast, plain, text.lower())


def test_builtin_rules_compile_to_the_same_regexes() -> None:
    notes = [d.text for d in generate_notes(40, seed=11, **REALISTIC)]
    rng = random.Random(5)
    # Odd-case letters sprinkled into some notes: they must match as re.compile says.
    notes += ["".join(ch if rng.random() > 0.05 else rng.choice(ODD_CASES) for ch in n) for n in notes[:10]]
    for lang in ("en", "es"):
        for rule in load_rules(lang):
            plain = re.compile(rule.pattern.pattern, rule.pattern.flags)
            assert rule.pattern.groupindex == plain.groupindex and rule.pattern.groups == plain.groups
            for text in notes[::5] if lang == "es" else notes:
                same(rule.pattern, plain, text)


def test_alternations_are_factored() -> None:
    # Patterns compare equal only when their compiled code is the same.
    assert compile_pattern(CASES[0][0]) != re.compile(CASES[0][0])
    # too short to factor (and "x" is a literal prefix: no first-character set either)
    assert compile_pattern("x(?i:ab|cd)") == re.compile("x(?i:ab|cd)")


FIRST_SET_CASES = [
    # look-arounds, then a class: searched only from the characters of the class
    (r"(?<![\w.])(?<!\w-)(?:St\.?\s+)?(?!(?i:by|the)\b)[A-Z][a-z]+", ["Seen by The Bay at St. Ann; St Bay"]),
    (r"(?i:(?<!\w)(?:k|s)[a-z]*)", ["\u212aid \u017fon KID son Sal"]),
    (r"(?<!\d)(?:\((?=\d))?\d{3}\)?-\d{4}", ["(617)-5555 x617-1234"]),
    (r"(?=[a-z])(?:[a-z]+\s+){0,2}(?:ab|[\u00e9\u212a]x)", ["foo bar ab, \u00e9x, Kx \u212ax, baz kx"]),
    (r"(?m:^[ \t]*-*[ \t]*[A-Z][a-z]+)", ["note\n  - Ann\n--Bo \n Cy"]),
]


@pytest.mark.parametrize(("source", "texts"), FIRST_SET_CASES)
def test_first_character_sets_keep_the_matches(source: str, texts: list[str]) -> None:
    fast, plain = compile_pattern(source), re.compile(source)
    for text in texts:
        for variant in (text, text.upper(), text.lower(), f"\u00e9{text}\u0130"):
            same(fast, plain, variant)
            for pos in range(len(variant) + 1):  # searches from inside the text, as rule windows do
                a, b = fast.search(variant, pos), plain.search(variant, pos)
                assert (a and (a.span(), a.groups())) == (b and (b.span(), b.groups()))


def test_first_character_set_is_used() -> None:
    # re finds no prefix or character set for a pattern that opens with look-arounds
    # and an optional group; compile_pattern gives it one.
    source = r"(?<![\w.])(?:St\.?\s+)?[A-Z][a-z]+"
    assert compile_pattern(source) != re.compile(source)
    assert compile_pattern(r"(?<!\w)(?:\S|x)?\S") == re.compile(r"(?<!\w)(?:\S|x)?\S")  # too wide a set


def test_bad_pattern_raises_as_re_does() -> None:
    with pytest.raises(re.error):
        compile_pattern("(?i:a|b")


def test_prefixed_anchors_hit_where_finditer_does() -> None:
    rules = load_rules("en")
    assert rules._prefixed is not None and len(rules._prefixed.anchors) >= 5
    texts = [d.text for d in generate_notes(30, seed=12, **REALISTIC)]
    texts += [
        "SNF (rehab) vs LTACH; Pgy-2 resident at bedside. J. Ruiz RN x4-1234, pt 91 yo, 109.",
        "d/c to alf(assisted living) rrt ab ext 12; md:pa-c r.n. CCC-SLP, ms-3, ms3 intern",
    ]
    for text in texts:
        for anchor, hits in zip(rules._prefixed.anchors, rules._prefixed.hits(text, text.lower())):
            assert hits == [m.span() for m in anchor.finditer(text)]


@pytest.mark.parametrize("text", [
    "Dispo: \u017fnf (rehab) per \u0131ntern Pgy-1, PT spoke with wife Ann",
    "\u0130ntern note: to SNF (assisted living). K. Lee RN 617-555-0101",
])
def test_odd_case_notes_find_what_a_full_scan_finds(text: str) -> None:
    rules = load_rules("en")
    assert rules.find(text) == rules.find(text, use_anchors=False)
