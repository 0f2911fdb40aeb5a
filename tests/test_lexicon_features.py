"""Issue 12: CRF word features from the English lexicon, and the line-case feature."""

from __future__ import annotations

import pytest

from deid_core.engine.features import FeatureConfig, FeatureExtractor
from deid_core.engine.lexicons import LEXICON_VERSION
from deid_core.engine.tokenize import tokenize
from deid_core.errors import ModelError


def feats(text: str, word: str, lang: str = "en", **kw: object) -> list[str]:
    tok = tokenize(text, lang)
    fx = FeatureExtractor(FeatureConfig(**kw), lang=lang)  # type: ignore[arg-type]
    flat = [f for sent in fx.sentence_features(tok) for f in sent]
    return flat[[t.text for t in tok.tokens].index(word)]


@pytest.mark.parametrize(
    ("text", "word", "present", "absent"),
    [
        # the same features whatever the case: the lexicon is read in lower case
        ("spoke with Nguyen today", "Nguyen", ["0:lex=name", "0:lexlast", "-1:lex=stop"], ["0:lexplace"]),
        ("SPOKE WITH NGUYEN TODAY", "NGUYEN", ["0:lex=name", "0:lexlast", "lcase=caps"], []),
        ("spoke with nguyen today", "nguyen", ["0:lex=name", "0:lexlast", "lcase=lower"], []),
        ("wife Hope at bedside", "Hope", ["0:lex=ambiguous", "0:lexfirst", "-1:lex=stop"], ["lcase=caps", "lcase=lower"]),
        ("lives in Worcester now", "Worcester", ["0:lexplace", "-1:lex=stop"], []),
        ("given morphine 2mg", "morphine", ["0:lex=stop"], ["0:lexfirst"]),
    ],
)
def test_lexicon_and_case_features(text: str, word: str, present: list[str], absent: list[str]) -> None:
    got = feats(text, word)
    for f in present:
        assert f in got, f
    for f in absent:
        assert f not in got, f


def test_switched_off_and_spanish_have_none() -> None:
    off = feats("spoke with Nguyen today", "Nguyen", lexicon="", line_case=False)
    assert not any("lex" in f for f in off)
    es = feats("HABLÉ CON EL DOCTOR GARCÍA HOY", "GARCÍA", lang="es", lexicon=LEXICON_VERSION)
    assert not any(":lex" in f for f in es) and "lcase=caps" in es


def test_old_feature_configs_load_without_the_new_features() -> None:
    """A features.json saved before issue 12 must keep predicting what it predicted."""
    old = FeatureConfig.from_dict({"format_version": 1, "window": 2, "gazetteer": True})
    assert old.lexicon == "" and old.line_case is False
    new = FeatureConfig.from_dict(FeatureConfig().to_dict())
    assert new.lexicon == LEXICON_VERSION and new.line_case is True


def test_a_model_built_on_another_lexicon_is_refused() -> None:
    with pytest.raises(ModelError, match="lexicon"):
        FeatureExtractor(FeatureConfig(lexicon="en-0"), lang="en")


@pytest.mark.parametrize(
    "words",
    [["SPOKE", "WITH", "NGUYEN"], ["spoke", "with", "nguyen"], ["Mixed", "Case", "line"],
     ["ÉLODIE", "MÜLLER", "SEEN"], ["élodie", "müller", "vue"], ["ΑΘΗΝΑ", "clinic"], ["BP", "120/80", "HR", "80"],
     ["ǅ", "ǈ", "ᾈ", "ABCDEFG"], []],
)
def test_line_case_counts_letters_as_str_methods_do(words) -> None:
    # ASCII lines are counted with str.translate; the counts must be isupper/islower's.
    from deid_core.engine.features import _line_case

    upper = sum(c.isupper() for w in words for c in w)
    lower = sum(c.islower() for w in words for c in w)
    expected = ("lcase=caps" if upper >= 6 and upper > 3 * lower
                else "lcase=lower" if lower >= 6 and upper == 0 else None)
    assert _line_case(words) == expected
