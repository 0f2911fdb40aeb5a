"""Identifiers from the structured record (meta.known_phi) seed propagation (issue 14)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deid_core.engine.model import DeidModel
from deid_core.engine.propagate import KNOWN_SOURCE, find_spans, known_index, known_phi_items
from deid_core.errors import CorpusFormatError
from deid_core.schemes import load_scheme
from deid_core.spans import Document

I2B2 = load_scheme("i2b2_2014")
FIXTURE = Path(__file__).parent / "fixtures" / "model_v1_en"
KNOWN = [
    {"label": "PATIENT", "value": "Zebediah Quartermaine"},
    {"label": "MEDICALRECORD", "value": "88231944"},
    {"label": "DATE", "value": "1948-05-20"},
]


@pytest.mark.parametrize(
    ("written", "label"),
    [
        ("Zebediah Quartermaine", "PATIENT"),
        ("ZEBEDIAH QUARTERMAINE", "PATIENT"),
        ("Quartermaine", "PATIENT"),
        ("Zebediah", "PATIENT"),
        ("Z. Quartermaine", "PATIENT"),  # initials with the surname
        ("Quartermaine, Z.", "PATIENT"),
        ("ZQuartermaine", "USERNAME"),
        ("zquartermaine@mercy.org", "EMAIL"),
        ("88231944", "MEDICALRECORD"),
        ("1948-05-20", "DATE"),  # the date of birth in every written format
        ("05/20/1948", "DATE"),
        ("5/20/1948", "DATE"),
        ("5/20/48", "DATE"),
        ("20/05/1948", "DATE"),
        ("20.05.1948", "DATE"),
        ("May 20, 1948", "DATE"),
        ("May 20th, 1948", "DATE"),
        ("20 May 1948", "DATE"),
        ("20-May-1948", "DATE"),
        ("20 de mayo de 1948", "DATE"),
        ("MAY 20, 1948", "DATE"),
    ],
)
def test_known_identifiers_are_found_in_every_variant(written: str, label: str) -> None:
    text = f"Seen today: {written} (see chart)."
    index = known_index(known_phi_items({"known_phi": KNOWN}), I2B2)
    found = [(text[s.start : s.end], s.label, s.source) for s in find_spans(text, [], index, I2B2.name)]  # type: ignore[arg-type]
    assert (written, label, KNOWN_SOURCE) in found


def test_other_dates_and_words_are_not_known() -> None:
    index = known_index(known_phi_items({"known_phi": KNOWN}), I2B2)
    text = "On 5/21/1948 and 1948-06-20 the quarter main door; 882319440 refs."
    assert list(find_spans(text, [], index, I2B2.name)) == []  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad",
    [{"known_phi": "Zebediah"}, {"known_phi": [{"label": "PATIENT"}]}, {"known_phi": [{"label": "", "value": "x"}]},
     {"known_phi": [{"label": "PATIENT", "value": "  "}]}],
)
def test_malformed_known_phi_is_refused_without_the_value(bad: dict) -> None:
    with pytest.raises(CorpusFormatError) as info:
        known_phi_items(bad, doc_id="n1")
    assert "n1" in str(info.value) and "Zebediah" not in str(info.value)


def test_the_model_marks_them_with_source_known() -> None:
    model = DeidModel.load(FIXTURE)
    text = "Pt QUARTERMAINE, DOB May 20th, 1948. Seen by Z. Quartermaine's son."
    doc = Document("k1", text, (), {"known_phi": KNOWN})
    spans = model.predict(doc).spans
    covered = "".join(c if any(s.start <= i < s.end for s in spans) else "_" for i, c in enumerate(text))
    for part in ("QUARTERMAINE", "May 20th, 1948", "Z. Quartermaine"):
        assert part in covered, covered
    assert any(s.source == KNOWN_SOURCE for s in spans)
    assert not any(s.source == KNOWN_SOURCE for s in model.predict(doc.with_meta(known_phi=[])).spans)


def test_known_phi_never_leaves_in_an_export(tmp_path: Path) -> None:
    from deid_core.protect.export import ExportConfig, ExportItem, export_corpus
    from deid_core.protect.operators import OperatorConfig

    text = "Mr. Quartermaine called about his MRN 88231944."
    doc = Document("d1", text, (), {"known_phi": KNOWN, "patient_id": "P1"})
    config = ExportConfig(OperatorConfig(scheme="i2b2_2014", keep_meta=("known_phi", "source")), ("jsonl",))
    result = export_corpus([ExportItem(doc, patient_key="P1")], tmp_path / "out", config=config, secret=b"k" * 20)
    everything = "".join(p.read_text() for p in result.path.rglob("*") if p.is_file())
    assert "Quartermaine" not in everything and "88231944" not in everything
    # Not copied even when an admin lists it in keep_meta.
    assert "known_phi" not in (result.path / "corpus.jsonl").read_text()
    assert {label for _, _, _, label in result.propagated} == {"PATIENT", "MEDICALRECORD"}


def test_csv_columns_named_on_import_become_known_phi(tmp_path: Path) -> None:
    from deid_core.formats.csv_text import read_csv

    path = tmp_path / "notes.csv"
    path.write_text("id,text,name,mrn\nn1,Seen Mr. Quartermaine.,Zebediah Quartermaine,88231944\nn2,No record.,,\n")
    docs = list(read_csv(path, id_column="id", known_columns={"name": "PATIENT", "mrn": "MEDICALRECORD"}))
    assert docs[0].meta["known_phi"] == [
        {"label": "PATIENT", "value": "Zebediah Quartermaine"}, {"label": "MEDICALRECORD", "value": "88231944"}
    ]
    assert "known_phi" not in docs[1].meta
    with pytest.raises(CorpusFormatError):
        list(read_csv(path, id_column="id", known_columns={"dob": "DATE"}))
    assert json.dumps(docs[0].meta)  # stored like any meta, with the note


def test_import_stores_known_phi_with_the_note_and_refuses_a_bad_list(store) -> None:  # type: ignore[no-untyped-def]
    from deid_core.store.repository import (
        count_documents,
        create_project,
        get_document,
        import_documents,
        review_queue,
    )

    create_project(store, "p", lang="en", scheme="i2b2_2014")
    good = Document("n1", "Mr. Quartermaine called.", (), {"known_phi": KNOWN})
    bad = Document("n2", "Another note.", (), {"known_phi": [{"label": "PATIENT"}]})
    with pytest.raises(CorpusFormatError):
        import_documents(store, "p", [good, bad])
    assert count_documents(store, "p") == 0  # all or nothing
    import_documents(store, "p", [good])
    (row,) = review_queue(store, "p", order="id", limit=5)
    assert get_document(store, row.doc_id).document.meta["known_phi"] == KNOWN


def test_the_bias_views_see_the_records_identifiers_at_every_bias() -> None:
    """The Bias page and bias sweeps re-decode encodings: they must show what predict shows."""
    from deid_core.ui.bias import corpus_sweep_spans, decode_layer

    model = DeidModel.load(FIXTURE)
    doc = Document("k1", "pt quartermaine seen, mrn 88231944 on file.", (), {"known_phi": KNOWN})
    encoded = model.encode(doc)
    where = {(doc.text[s.start:s.end], s.source) for s in model.predict(doc, 3.0).spans}
    assert ("quartermaine", KNOWN_SOURCE) in where
    biases = [-2.0, 0.0, 3.0]
    for spans in corpus_sweep_spans(model, [encoded], biases)[0]:
        assert any(doc.text[s.start:s.end] == "quartermaine" for s in spans)
    for bias in biases:
        (shown,) = decode_layer(model, [doc], [encoded], bias)
        assert any(shown.text[s.start:s.end] == "quartermaine" for s in shown.spans)
