"""Issue 14: a PHI string confirmed once does not slip through anywhere else in an export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deid_core.corpus import read_jsonl
from deid_core.errors import LeakDetected
from deid_core.protect.export import ExportConfig, ExportItem, export_corpus
from deid_core.protect.operators import OperatorConfig, deidentify_document
from deid_core.protect.surrogate_map import pseudonym
from deid_core.spans import Document, Span

SECRET = b"no-phi-twice-secret-0123456789"
NAME = "Zebediah Quartermaine"


def _doc(doc_id: str, text: str, tagged: dict[str, str], meta: dict | None = None) -> Document:
    spans = [Span(text.index(v), text.index(v) + len(v), label, "human:ann") for v, label in tagged.items()]
    return Document(doc_id, text, tuple(spans), meta or {})


# (document, patient, text, tagged strings); the planted leaks are the untagged mentions.
CORPUS = [
    ("a", "P1", f"Patient {NAME}, MRN 88231944, seen today.", {NAME: "PATIENT", "88231944": "MEDICALRECORD"}),
    ("b", "P1", "QUARTERMAINE called. Mr. Quartermaine wrote from zquartermaine@mercy.org as"
                " QuartermaineJr; MRN 8823-1944 and Zebediah.", {}),
    ("c", "P2", "Seen with Dr. Hale. Neighbour Quartermaine drove.", {"Hale": "DOCTOR"}),
]
PLANTED = {  # (document, planted string) -> how the check finds it
    ("b", "QUARTERMAINE"): "variant",
    ("b", "Quartermaine"): "variant",
    ("b", "zquartermaine@mercy.org"): "embedded",
    ("b", "QuartermaineJr"): "embedded",
    ("b", "8823-1944"): "digits",
    ("b", "Zebediah"): "variant",
    ("c", "Quartermaine"): "variant",
}


def _items() -> list[ExportItem]:
    return [ExportItem(_doc(i, t, tags, {"patient_id": p}), patient_key=p) for i, p, t, tags in CORPUS]


def _config(**kw: object) -> ExportConfig:
    return ExportConfig(OperatorConfig(scheme="i2b2_2014"), ("jsonl",), **kw)  # type: ignore[arg-type]


def test_every_planted_leak_is_caught_without_propagation(tmp_path: Path) -> None:
    with pytest.raises(LeakDetected):
        export_corpus(_items(), tmp_path / "out", config=_config(propagate=False), secret=SECRET)
    report = json.loads((tmp_path / "out.leak_report.json").read_text())
    texts = {i: t for i, _, t, _ in CORPUS}
    found = {
        (h["doc_id"], texts[h["doc_id"]][h["orig_start"] : h["orig_end"]]): h["match"]
        for h in report["hits"] if h["fails"]
    }
    assert found == PLANTED
    assert report["scope"] == "corpus" and NAME not in json.dumps(report)


@pytest.mark.parametrize(
    ("scope", "masked"),
    [("corpus", {"b", "c"}), ("patient", {"b"})],
)
def test_propagation_masks_them_within_the_scope(tmp_path: Path, scope: str, masked: set[str]) -> None:
    result = export_corpus(
        _items(), tmp_path / "out", config=_config(leak_scope=scope), secret=SECRET, keep_documents=True
    )
    assert result.manifest["leak_check"]["ok"] is True
    assert {d for d, *_ in result.propagated} == masked
    assert result.manifest["propagation"]["spans_per_label"]["PATIENT"] >= 5
    out = {d.meta["original_id"]: d for d in read_jsonl(result.path / "corpus.jsonl")}
    for doc_id, *_ in CORPUS:
        text = out[pseudonym(SECRET, "document", doc_id)].text.lower()
        assert ("quartermaine" in text) == (doc_id not in masked and doc_id != "a"), (doc_id, text)
        assert "88231944" not in text and "8823-1944" not in text
    # The same patient's mentions get the same surrogate as the confirmed name's surname.
    texts = {i: t for i, _, t, _ in CORPUS}
    by_doc = {r.doc_id: r for r in result.documents}
    full = next(d for d in by_doc["a"].decisions if d.original.label == "PATIENT")
    surname = by_doc["a"].text[full.new.start : full.new.end].split()[-1].lower()
    mentions = {
        by_doc["b"].text[d.new.start : d.new.end].lower()
        for d in by_doc["b"].decisions
        if texts["b"][d.original.start : d.original.end].lower() == "quartermaine"
    }
    assert mentions == {surname}


def test_document_scope_only_sees_each_note(tmp_path: Path) -> None:
    result = export_corpus(_items(), tmp_path / "out", config=_config(leak_scope="document"), secret=SECRET)
    assert result.manifest["leak_check"]["ok"] and result.propagated == []


def test_meta_is_checked_and_ids_are_pseudonymised_by_default(tmp_path: Path) -> None:
    items = [
        ExportItem(_doc("a", f"Patient {NAME} seen.", {NAME: "PATIENT"},
                        {"source": "/notes/Quartermaine/visit.txt"}), patient_key="MRN-88231944")
    ]
    result = export_corpus(items, tmp_path / "ok", config=_config(), secret=SECRET)
    (doc,) = read_jsonl(result.path / "corpus.jsonl")
    assert doc.id == pseudonym(SECRET, "document", "a") == doc.meta["original_id"]
    assert doc.meta["patient_key"] == pseudonym(SECRET, "patient", "MRN-88231944")
    assert doc.meta["source"] == pseudonym(SECRET, "source", "/notes/Quartermaine/visit.txt")
    assert result.manifest["ids"]["pseudonymised"] is True
    everything = "".join(p.read_text() for p in result.path.rglob("*") if p.is_file())
    assert "Quartermaine" not in everything and "88231944" not in everything and '"a"' not in everything
    # Kept ids (an admin's opt-in): the name in meta.source is a leak.
    with pytest.raises(LeakDetected):
        export_corpus(items, tmp_path / "kept", config=_config(keep_ids=True), secret=SECRET)
    report = json.loads((tmp_path / "kept.leak_report.json").read_text())
    assert [(h["field"], h["match"]) for h in report["hits"] if h["fails"]] == [("meta.source", "variant")]
    assert report["in_meta"] == 1


def test_a_surrogate_equal_to_another_original_of_the_note_is_not_used() -> None:
    config = OperatorConfig(scheme="i2b2_2014")
    gen = config.generator(SECRET)
    drawn = gen.generate("Marta Quill", "PATIENT", patient_key="P9").text
    assert drawn and drawn != "Marta Quill"
    text = f"Marta Quill and {drawn} were seen."
    doc = Document("d", text, (Span(0, 11, "PATIENT"), Span(16, 16 + len(drawn), "PATIENT")))
    result = deidentify_document(doc, doc.spans, config=config, secret=SECRET, patient_key="P9", generator=gen)
    first = result.decisions[0]
    assert first.operator == "tag" and drawn not in result.text


def test_keeping_ids_is_for_an_active_admin_only(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from deid_core.errors import PermissionDenied
    from deid_core.protect.export import export_project
    from deid_core.store.audit import list_events
    from deid_core.store.repository import create_project, import_documents
    from deid_core.store.users import create_user
    from deid_core.synthetic import generate_notes

    create_project(store, "p1", lang="en", scheme="i2b2_2014")
    notes = generate_notes(3, seed=4)
    import_documents(store, "p1", notes, annotations="gold")
    create_user(store, "rev", "a-long-password-1", role="reviewer")
    create_user(store, "boss", "a-long-password-2", role="admin")
    with pytest.raises(PermissionDenied):
        export_project(store, "p1", tmp_path / "r", secret=SECRET, config=_config(keep_ids=True), actor="rev")
    assert not (tmp_path / "r").exists()
    assert list_events(store, action="export_refused")[0].after["keep_ids"] is True
    result = export_project(store, "p1", tmp_path / "k", secret=SECRET, config=_config(keep_ids=True), actor="boss")
    assert result.manifest["ids"] == {"pseudonymised": False, "kept_by": "boss"}
    assert {d.id for d in read_jsonl(result.path / "corpus.jsonl")} == {d.id for d in notes}


def test_leak_table_links_to_review_at_the_original_offset(tmp_path: Path) -> None:
    from urllib.parse import parse_qs, urlsplit

    from deid_core.ui.exporting import leak_rows

    items = [
        ExportItem(_doc(i, t, tags, {"patient_id": p, "db_id": n}), patient_key=p)
        for n, (i, p, t, tags) in enumerate(CORPUS, start=7)
    ]
    with pytest.raises(LeakDetected) as info:
        export_corpus(items, tmp_path / "out", config=_config(propagate=False), secret=SECRET)
    rows = leak_rows(info.value.report, info.value.review_ids)
    texts = {i: t for i, _, t, _ in CORPUS}
    assert {(r["document"], texts[r["document"]][r["start"] : r["end"]]) for r in rows} == set(PLANTED)
    c_row = next(r for r in rows if r["document"] == "c")
    link = urlsplit(c_row["open"])
    assert link.path == "review"
    assert parse_qs(link.query) == {"doc": ["9"], "offset": [str(c_row["start"])]}  # what Review reads
    assert not any("Quartermaine" in str(v) for r in rows for v in r.values())


def test_acronyms_and_short_digit_runs_of_other_patients_are_not_masked(tmp_path: Path) -> None:
    """MEDDOCAN dev (issue 14): the name Eva masked the pain scale "EVA" and a postcode
    masked "20/400" in other patients' notes. In the patient's own notes both still count."""
    items = [
        ExportItem(_doc("e1", "Eva Lorenzo, CP 20400, admitted.", {"Eva Lorenzo": "PATIENT", "20400": "ZIP"}),
                   patient_key="P7"),
        ExportItem(_doc("e2", "EVA LORENZO again: EVA and 20-400 noted.", {}), patient_key="P7"),
        ExportItem(_doc("f1", "Pain EVA 7/10, visual acuity 20/400.", {}), patient_key="P8"),
    ]
    result = export_corpus(items, tmp_path / "out", config=_config(), secret=SECRET, keep_documents=True)
    assert result.manifest["leak_check"]["ok"] is True
    masked = {(d, items[[i.doc.id for i in items].index(d)].doc.text[a:b]) for d, a, b, _ in result.propagated}
    assert {("e2", "EVA LORENZO"), ("e2", "EVA"), ("e2", "20-400")} <= masked
    assert not any(d == "f1" for d, _ in masked)
    assert result.leak_report.possible  # reported for review, not failed
