from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deid_core.errors import InvalidSpan, OverlappingSpans, UnsupportedFormat
from deid_core.protect.operators import (
    OperatorConfig,
    OperatorSpec,
    deidentify_document,
    patient_key_from_meta,
)
from deid_core.protect.surrogate_map import InMemorySurrogateMapping
from deid_core.spans import Document, Span

SECRET = b"s3cret"
TEXT = "Pt John Smith (MRN 004512) seen 03/14/2067 at Mercy Hospital, age 92."
SPANS = (
    Span(3, 13, "PATIENT", "human:ann"),
    Span(19, 25, "MEDICALRECORD", "rule:mrn", 0.9),
    Span(32, 42, "DATE", "crf:v1", 0.8),
    Span(46, 60, "HOSPITAL"),
    Span(66, 68, "AGE"),
)
DOC = Document("n1", TEXT, SPANS, {"patient_id": "P7", "source_file": "/secret/path.txt", "split": "train"})


def _run(config: OperatorConfig, doc: Document = DOC, spans=SPANS, key: str | None = "P7"):
    return deidentify_document(doc, spans, config=config, secret=SECRET, patient_key=key)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (OperatorSpec("tag"), "Pt [**PATIENT**] (MRN [**MEDICALRECORD**]) seen [**DATE**] at [**HOSPITAL**], age [**AGE**]."),
        (OperatorSpec("tag", template="<{label}>"), "Pt <PATIENT> (MRN <MEDICALRECORD>) seen <DATE> at <HOSPITAL>, age <AGE>."),
        (OperatorSpec("redact"), "Pt [REDACTED] (MRN [REDACTED]) seen [REDACTED] at [REDACTED], age [REDACTED]."),
        (OperatorSpec("redact", mask_char="*"), "Pt **** ***** (MRN ******) seen ********** at ***** ********, age **."),
        (OperatorSpec("keep"), TEXT),
    ],
)
def test_tag_redact_keep(spec: OperatorSpec, expected: str) -> None:
    out = _run(OperatorConfig(default=spec))
    assert out.text == expected
    assert len(out.spans) == len(SPANS)
    for old, new in zip(SPANS, out.spans):
        assert out.offset_map.inverse().map_span(new).key == old.key
        assert new.source == old.source and new.label == old.label


def test_surrogate_mode_replaces_everything_but_a_young_age() -> None:
    out = _run(OperatorConfig(lang="en", scheme="i2b2_2014"))
    for span, new, decision in zip(SPANS, out.spans, out.decisions):
        value, replaced = TEXT[span.start : span.end], out.text[new.start : new.end]
        assert replaced != value
        assert decision.status == "replaced" and decision.operator == "surrogate"
    assert out.text.endswith("age 90+.")
    only_age = _run(OperatorConfig(lang="en", scheme="i2b2_2014"), DOC, [Span(66, 68, "AGE")])
    assert only_age.text == TEXT.replace("age 92", "age 90+")
    young = Document("n2", "age 45", (Span(4, 6, "AGE"),))
    y = _run(OperatorConfig(), young, young.spans)
    assert y.text == "age 45" and y.decisions[0].status == "kept"


def test_per_label_operators_and_fallback() -> None:
    config = OperatorConfig(
        scheme="i2b2_2014",
        default=OperatorSpec("surrogate"),
        per_label={"HOSPITAL": OperatorSpec("keep"), "PATIENT": OperatorSpec("redact")},
        fallback=OperatorSpec("tag", template="<{label}>"),
    )
    doc = Document("n3", "On Christmas at Mercy, Ann", (Span(3, 12, "DATE"), Span(16, 21, "HOSPITAL"), Span(23, 26, "PATIENT")))
    out = _run(config, doc, doc.spans)
    assert out.text == "On <DATE> at Mercy, [REDACTED]"
    assert [d.operator for d in out.decisions] == ["tag", "keep", "redact"]
    assert out.operator_counts() == {"keep": 1, "redact": 1, "tag": 1}


def test_meta_keeps_only_safe_keys_and_the_patient_key() -> None:
    out = _run(OperatorConfig(default=OperatorSpec("tag")))
    assert out.meta == {"split": "train", "original_id": "n1", "patient_key": "P7", "deidentified": True}
    doc = out.to_document()
    assert doc.id == "n1" and doc.text == out.text


def test_output_is_pure_and_order_independent() -> None:
    config = OperatorConfig(scheme="i2b2_2014")
    a = _run(config)
    shuffled = list(SPANS)
    random.Random(3).shuffle(shuffled)
    mapping = InMemorySurrogateMapping()
    b = deidentify_document(DOC, shuffled, config=config, secret=SECRET, patient_key="P7", mapping=mapping)
    assert a.text == b.text and a.spans == b.spans
    assert len(mapping) == len(b.mapping_entries) == 5  # name, id, date, hospital and age 90+
    other_note = Document("n9", "Seen by John Smith.", (Span(8, 18, "PATIENT"),))
    c = _run(config, other_note, other_note.spans)
    name = a.text[a.spans[0].start : a.spans[0].end]
    assert c.text == f"Seen by {name}."


def test_documents_without_a_patient_key_are_their_own_patient() -> None:
    config = OperatorConfig(scheme="i2b2_2014")
    doc2 = Document("n2", TEXT, SPANS)
    a = _run(config, DOC, SPANS, key=None)
    b = _run(config, doc2, SPANS, key=None)
    assert a.text != b.text
    assert a.meta["patient_key"] is None


@pytest.mark.parametrize(
    ("spans", "error"),
    [
        ((Span(3, 200, "PATIENT"),), InvalidSpan),
        ((Span(3, 13, "PATIENT"), Span(8, 20, "DATE")), OverlappingSpans),
    ],
)
def test_bad_spans_raise_without_text(spans, error: type) -> None:
    with pytest.raises(error) as info:
        _run(OperatorConfig(), DOC, spans)
    assert "Smith" not in str(info.value) and "n1" in str(info.value)


@pytest.mark.parametrize(
    "raw",
    [
        {"default": "shred"},
        {"default": {"kind": "tag", "template": "{name}"}},
        {"default": {"kind": "tag", "template": ""}},
        {"fallback": "keep"},
        {"fallback": "surrogate"},
        {"consistency": "global"},
        {"max_shift_days": 0},
        {"kinds": {"PATIENT": "alien"}},
        {"colour": "red"},
        {"per_label": {"PATIENT": {"kind": "redact", "mask_char": "**"}}},
        {"per_label": {"PATIENT": {"kind": "redact", "colour": 1}}},
        {"per_label": ["PATIENT"]},
        "tag",
    ],
)
def test_bad_configs_are_refused(raw) -> None:
    with pytest.raises(UnsupportedFormat):
        OperatorConfig.from_dict(raw)


def test_config_round_trips() -> None:
    config = OperatorConfig(
        lang="es",
        scheme="meddocan",
        default=OperatorSpec("surrogate"),
        per_label={"SEXO_SUJETO_ASISTENCIA": OperatorSpec("keep"), "CALLE": OperatorSpec("redact", mask_char="#")},
        fallback=OperatorSpec("tag", template="<{label}>"),
        consistency="corpus",
        max_shift_days=100,
        kinds={"OTROS_SUJETO_ASISTENCIA": "id"},
    )
    assert OperatorConfig.from_dict(config.to_dict()) == config
    assert OperatorConfig.for_mode("redact").default.kind == "redact"


@pytest.mark.parametrize(
    ("meta", "path", "expected"),
    [
        ({"patient_id": "P1"}, "meta.patient_id", "P1"),
        ({"patient_id": 12}, "patient_id", "12"),
        ({"p": {"id": "x"}}, "meta.p.id", "x"),
        ({}, "meta.patient_id", None),
        ({"patient_id": "P1"}, None, None),
    ],
)
def test_patient_key_from_meta(meta: dict, path: str | None, expected: str | None) -> None:
    assert patient_key_from_meta(Document("d", "x", (), meta), path) == expected


@st.composite
def doc_and_spans(draw: st.DrawFn) -> tuple[Document, list[Span]]:
    text = draw(st.text(min_size=1, max_size=80))
    cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=8)))
    labels = ["PATIENT", "DATE", "PHONE", "CITY", "AGE", "IDNUM", "URL"]
    spans = [Span(a, b, draw(st.sampled_from(labels))) for a, b in zip(cuts[::2], cuts[1::2]) if a < b]
    return Document("h", text, tuple(spans)), spans


@settings(max_examples=80, deadline=None)
@given(doc_and_spans(), st.sampled_from(["tag", "redact", "surrogate"]))
def test_any_text_and_spans_deidentify_with_exact_offsets(case, mode: str) -> None:
    doc, spans = case
    out = _run(OperatorConfig.for_mode(mode, scheme="i2b2_2014"), doc, spans, key="p")
    back = out.offset_map.inverse()
    for old, new, decision in zip(sorted(spans, key=lambda s: s.start), out.spans, out.decisions):
        assert back.map_span(new).key == old.key
        if decision.status == "kept":
            assert out.text[new.start : new.end] == doc.text[old.start : old.end]
    again = _run(OperatorConfig.for_mode(mode, scheme="i2b2_2014"), doc, list(reversed(spans)), key="p")
    assert again.text == out.text
