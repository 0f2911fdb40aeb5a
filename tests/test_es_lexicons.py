"""Issue 14: Spanish quasi-identifier lexicons (demonyms, kinship, professions, ...) as gazetteer features."""

from __future__ import annotations

import pytest

from deid_core.engine.features import FeatureConfig, FeatureExtractor
from deid_core.engine.gazetteers import Gazetteer, builtin_gazetteer, merge_gazetteers
from deid_core.engine.lexicons import SPANISH_QUASI_LISTS, inflect_es, spanish_quasi_identifiers
from deid_core.engine.tokenize import tokenize


@pytest.mark.parametrize(
    ("base", "forms"),
    [
        ("peruano", ["peruano", "peruana", "peruanos", "peruanas"]),
        ("alemán", ["alemán", "alemana", "alemanes", "alemanas"]),
        ("francés", ["francés", "francesa", "franceses", "francesas"]),
        ("español", ["español", "española", "españoles", "españolas"]),
        ("andaluz", ["andaluz", "andaluza", "andaluces", "andaluzas"]),
        ("marroquí", ["marroquí", "marroquíes", "marroquís"]),
        ("vietnamita", ["vietnamita", "vietnamitas"]),
        ("militar", ["militar", "militares"]),
        ("profesor", ["profesor", "profesora", "profesores", "profesoras"]),
    ],
)
def test_inflection(base: str, forms: list[str]) -> None:
    assert inflect_es(base) == forms


def test_lists_load_lower_case_and_inflected() -> None:
    lists = spanish_quasi_identifiers()
    assert set(lists) == set(SPANISH_QUASI_LISTS)
    for label, phrases in lists.items():
        assert phrases, label
        assert all(p == p.lower() and p.strip() == p and "#" not in p for p in phrases), label
    assert {"boliviana", "afganas", "vietnamita", "caucásica"} <= set(lists["NATIONALITY"])
    assert {"madre", "hermanos", "tía", "paterna"} <= set(lists["KINSHIP"])
    assert {"pescadora", "auxiliares de enfermería", "soldadora"} <= set(lists["PROFESSION"])
    assert {"viudo", "casada"} <= set(lists["MARITAL_STATUS"])
    assert "homosexual" in lists["ORIENTATION"]


def _gaz_marks(text: str) -> dict[str, list[str]]:
    tok = tokenize(text, "es")
    fx = FeatureExtractor(FeatureConfig(), lang="es", gazetteer=builtin_gazetteer("es"))
    feats = fx.context_features(tok)
    return {t.text: [f for f in feats[i] if f.startswith("gaz=")] for i, t in enumerate(tok.tokens)}


def test_gazetteer_features_on_spanish_text() -> None:
    marks = _gaz_marks(
        "Paciente boliviana, viuda, auxiliar de enfermería, acude con su hermano. "
        "Técnica quirúrgica según el modelo habitual; conducto auditivo libre."
    )
    assert "gaz=S-NATIONALITY" in marks["boliviana"]
    assert "gaz=S-MARITAL_STATUS" in marks["viuda"]
    assert "gaz=B-PROFESSION" in marks["auxiliar"]
    assert "gaz=E-PROFESSION" in marks["enfermería"]
    assert "gaz=S-KINSHIP" in marks["hermano"]
    # ambiguity: clinical words that look like list entries are left out of the lists
    for word in ("Técnica", "modelo", "conducto", "auditivo", "quirúrgica", "Paciente"):
        assert not any(m.endswith(tuple(SPANISH_QUASI_LISTS)) for m in marks[word]), word


def test_english_gazetteer_has_no_spanish_lists() -> None:
    assert not set(builtin_gazetteer("en").labels) & set(SPANISH_QUASI_LISTS)


def test_lists_match_lower_case_words_only() -> None:
    """A capitalised demonym or trade is mostly a surname or place ("Navarro", "Herrero", "Argentina")."""
    marks = _gaz_marks("Dr. Herrero Navarro: paciente navarro, herrero de oficio, natural de Argentina.")
    assert "gaz=S-NATIONALITY" in marks["navarro"]
    assert "gaz=S-PROFESSION" in marks["herrero"]
    assert not any("NATIONALITY" in m for m in marks["Navarro"] + marks["Argentina"])
    assert not any("PROFESSION" in m for m in marks["Herrero"])
    assert "gaz=S-LAST_NAME" in marks["Navarro"]  # Faker's surname list is not case-restricted


def test_lowercase_labels_survive_json_and_merge() -> None:
    gaz = Gazetteer({"KINSHIP": {("madre",)}, "CITY": {("madrid",)}}, lowercase_labels=["KINSHIP"])
    for g in (Gazetteer.from_json(gaz.to_json()), merge_gazetteers(Gazetteer(), gaz)):
        assert g.lowercase_labels == {"KINSHIP"}
        assert g.matches(["su", "madre"]) == [(1, 2, "KINSHIP")]
        assert g.matches(["MADRE", "Madrid"]) == [(1, 2, "CITY")]
    assert Gazetteer.from_json({"format_version": 1, "entries": {}}).lowercase_labels == frozenset()
