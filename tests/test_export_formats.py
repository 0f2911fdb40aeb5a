from __future__ import annotations

import csv
import json
import zipfile
from pathlib import Path

import pytest

from deid_core.corpus import read_jsonl
from deid_core.engine.tagging import tags_to_spans
from deid_core.engine.tokenize import tokenize
from deid_core.errors import CorpusFormatError, ExportRefused, LeakDetected, UnsupportedFormat
from deid_core.formats import read_brat, read_brat_dir, read_i2b2_xml, write_brat, write_i2b2_xml
from deid_core.formats.conll import read_conll, write_conll
from deid_core.formats.docbin import read_docbin
from deid_core.formats.spans_csv import write_spans_csv
from deid_core.protect.export import (
    FORMATS,
    ExportConfig,
    ExportItem,
    export_corpus,
    verify_manifest,
)
from deid_core.protect.operators import OperatorConfig, OperatorSpec
from deid_core.protect.replace import OffsetMap
from deid_core.protect.surrogate_map import InMemorySurrogateMapping, pseudonym
from deid_core.spans import Document, Span
from deid_core.synthetic import generate_notes

SECRET = b"export-secret-0123456789"


@pytest.fixture(scope="module")
def notes() -> list[Document]:
    return generate_notes(12, seed=5)


@pytest.fixture(scope="module")
def imported(notes: list[Document], tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Document]]:
    """The originals written as BRAT and i2b2 XML and read back: the import side."""
    root = tmp_path_factory.mktemp("import")
    for doc in notes:
        write_brat(doc, root / "brat")
        (root / "xml").mkdir(exist_ok=True)
        (root / "xml" / f"{doc.id}.xml").write_text(write_i2b2_xml(doc), encoding="utf-8")
    brat = list(read_brat_dir(root / "brat"))
    xml = [read_i2b2_xml(root / "xml" / f"{d.id}.xml") for d in notes]
    return {"brat": brat, "i2b2": xml}


@pytest.fixture(scope="module")
def exported(notes: list[Document], tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("export") / "release"
    items = [ExportItem(d, patient_key=d.meta["patient_id"], reviewers=("ann",)) for d in notes]
    config = ExportConfig(OperatorConfig(scheme="i2b2_2014"), formats=FORMATS)
    return export_corpus(items, out, config=config, secret=SECRET, mapping=InMemorySurrogateMapping())


@pytest.mark.parametrize("fmt", ["brat", "i2b2"])
def test_import_export_round_trip(notes, imported, exported, tmp_path: Path, fmt: str) -> None:
    # Import gives back the originals exactly.
    for original, back in zip(notes, imported[fmt]):
        assert back.text == original.text
        assert [s.key for s in back.spans] == [s.key for s in original.spans]
    # Export of what was imported: the de-identified files read back to the same corpus.
    root = exported.path
    corpus = {d.id: d for d in read_jsonl(root / "corpus.jsonl")}
    for doc in corpus.values():
        back = read_brat(root / "brat" / f"{doc.id}.txt") if fmt == "brat" else read_i2b2_xml(root / "i2b2" / f"{doc.id}.xml")
        assert back.text == doc.text
        assert [s.key for s in back.spans] == [s.key for s in doc.spans]


def test_jsonl_offset_maps_link_back_to_the_originals(notes, exported) -> None:
    root = exported.path
    corpus = {d.id: d for d in read_jsonl(root / "corpus.jsonl")}
    # Ids are HMAC pseudonyms by default (issue 14): the result maps them back.
    originals = {exported.ids[d.id]: d for d in notes}
    maps = [json.loads(line) for line in (root / "offset_maps.jsonl").read_text().splitlines()]
    assert {m["id"] for m in maps} == set(corpus)
    for m in maps:
        back = OffsetMap.from_dict(m["offset_map"]).inverse()
        doc, orig = corpus[m["id"]], originals[m["id"]]
        assert [back.map_span(s).key for s in doc.spans] == [s.key for s in orig.spans]
        assert doc.meta["original_id"] == pseudonym(SECRET, "document", orig.id) == doc.id
        assert doc.meta["patient_key"] == pseudonym(SECRET, "patient", orig.meta["patient_id"])
        assert doc.meta["reviewed"] is True


def test_text_zip_conll_docbin_and_csv_agree_with_jsonl(exported) -> None:
    root = exported.path
    corpus = read_jsonl(root / "corpus.jsonl")
    with zipfile.ZipFile(root / "texts.zip") as zf:
        assert sorted(zf.namelist()) == sorted(f"{d.id}.txt" for d in corpus)
        for d in corpus:
            assert zf.read(f"{d.id}.txt").decode() == d.text == (root / "texts" / f"{d.id}.txt").read_text()
    conll = dict(read_conll(root / "corpus.conll"))
    for d in corpus:
        tokens = tokenize(d.text).tokens
        rows = conll[d.id]
        assert [t for t, _ in rows] == [t.text for t in tokens]
        assert [s.key for s in tags_to_spans(tokens, [tag for _, tag in rows])] == [s.key for s in d.spans]
    spacy_docs = {d.id: d for d in read_docbin(root / "corpus.spacy")}
    for d in corpus:
        assert spacy_docs[d.id].text == d.text
        assert [s.key for s in spacy_docs[d.id].spans] == [s.key for s in d.spans]
    with open(root / "spans.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == sum(len(d.spans) for d in corpus)
    by_doc = {d.id: d for d in corpus}
    for row in rows:
        doc = by_doc[row["doc_id"]]
        assert doc.text[int(row["start"]) : int(row["end"])] == row["text"].removeprefix("'")
        assert row["operator"] == "surrogate" and row["source"] == "gold"


def test_manifest_counts_checksums_and_no_phi(notes, exported) -> None:
    root = exported.path
    manifest = json.loads((root / "manifest.json").read_text())
    assert manifest["documents"] == len(notes)
    assert manifest["spans"] == sum(len(d.spans) for d in notes) == sum(manifest["spans_per_label"].values())
    assert manifest["reviewers"] == ["ann"] and manifest["scope"]["reviewed_only"] is True
    assert manifest["operators"]["default"]["kind"] == "surrogate"
    assert manifest["leak_check"]["ok"] is True and manifest["leak_check"]["leaks"] == 0
    assert "manifest.json" not in manifest["files"] and "corpus.jsonl" in manifest["files"]
    assert verify_manifest(root) == []
    everything = "".join(p.read_text(errors="ignore") for p in root.rglob("*") if p.is_file() and p.suffix != ".spacy")
    for doc in notes:
        name = next(doc.text[s.start : s.end] for s in doc.spans if s.label == "PATIENT")
        assert name not in everything


def test_tampering_is_detected(tmp_path: Path, notes) -> None:
    out = tmp_path / "x"
    export_corpus([ExportItem(notes[0])], out, config=ExportConfig(formats=("txt",)), secret=SECRET)
    (out / "texts" / f"{pseudonym(SECRET, 'document', notes[0].id)}.txt").write_text("changed")
    assert verify_manifest(out) == [f"texts/{pseudonym(SECRET, 'document', notes[0].id)}.txt"]


def test_exports_are_deterministic(tmp_path: Path, notes) -> None:
    items = [ExportItem(d, patient_key=d.meta["patient_id"]) for d in notes[:5]]
    config = ExportConfig(OperatorConfig(scheme="i2b2_2014"), formats=("jsonl", "txt-zip"))
    a = export_corpus(items, tmp_path / "a", config=config, secret=SECRET)
    b = export_corpus(list(reversed(items)), tmp_path / "b", config=config, secret=SECRET)
    da = {d.id: d for d in read_jsonl(a.path / "corpus.jsonl")}
    db = {d.id: d for d in read_jsonl(b.path / "corpus.jsonl")}
    assert da == db
    assert a.manifest["secret_fingerprint"] == b.manifest["secret_fingerprint"]


@pytest.mark.parametrize(
    ("include", "confirm", "expected_docs"),
    [(False, False, 3), (False, True, 3), (True, True, 5)],
)
def test_scope_reviewed_only_unless_confirmed(tmp_path: Path, notes, include: bool, confirm: bool, expected_docs: int) -> None:
    items = [ExportItem(d, reviewed=i < 3, model_version="crf-v2", bias=0.5) for i, d in enumerate(notes[:5])]
    config = ExportConfig(formats=("jsonl",), include_unreviewed=include)
    result = export_corpus(items, tmp_path / "out", config=config, secret=SECRET, confirm_unreviewed=confirm)
    scope = result.manifest["scope"]
    assert result.manifest["documents"] == expected_docs
    assert scope["include_unreviewed"] is include and scope["unreviewed_confirmed"] is (include and confirm)
    assert scope["skipped_unreviewed"] == (0 if include else 2)
    assert result.manifest["model_versions"] == ["crf-v2"] and result.manifest["bias"] == [0.5]


def test_unconfirmed_unreviewed_export_is_refused_and_writes_nothing(tmp_path: Path, notes) -> None:
    items = [ExportItem(notes[0], reviewed=False)]
    with pytest.raises(ExportRefused):
        export_corpus(items, tmp_path / "out", config=ExportConfig(include_unreviewed=True), secret=SECRET)
    assert list(tmp_path.iterdir()) == []


def test_existing_export_is_never_overwritten(tmp_path: Path, notes) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("x")
    with pytest.raises(ExportRefused):
        export_corpus([ExportItem(notes[0])], tmp_path / "out", config=ExportConfig(), secret=SECRET)
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["keep.txt"]


def test_leak_stops_the_export_unless_allowed(tmp_path: Path) -> None:
    text = "Patient Quentin Marlowe seen. Quentin Marlowe agreed."
    doc = Document("leaky", text, (Span(8, 23, "PATIENT"),))
    # Propagation would mask the second mention (issue 14); without it, the check stops the export.
    with pytest.raises(LeakDetected) as info:
        export_corpus([ExportItem(doc)], tmp_path / "out", config=ExportConfig(propagate=False), secret=SECRET)
    assert "Marlowe" not in str(info.value)
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == ["out.leak_report.json"]
    report = json.loads((tmp_path / "out.leak_report.json").read_text())
    assert report["leaks"] == 1 and report["hits"][0]["start"] > 23
    assert "Marlowe" not in (tmp_path / "out.leak_report.json").read_text()
    allowed = export_corpus(
        [ExportItem(doc)], tmp_path / "out2", config=ExportConfig(allow_leaks=True, propagate=False), secret=SECRET
    )
    assert allowed.manifest["leak_check"]["ok"] is False and allowed.manifest["allow_leaks"] is True
    masked = export_corpus([ExportItem(doc)], tmp_path / "out3", config=ExportConfig(), secret=SECRET)
    assert masked.manifest["leak_check"]["ok"] is True and masked.propagated == [("leaky", 30, 45, "PATIENT")]


def test_audit_hook_gets_a_summary(tmp_path: Path, notes) -> None:
    events: list[dict] = []
    export_corpus([ExportItem(notes[0])], tmp_path / "o", config=ExportConfig(), secret=SECRET, audit=events.append)
    assert len(events) == 1 and events[0]["documents"] == 1 and events[0]["path"].endswith("o")


def test_colliding_file_names_are_refused(tmp_path: Path) -> None:
    docs = [Document("a/b", "x"), Document("a_b", "y")]
    with pytest.raises(CorpusFormatError):
        export_corpus(
            [ExportItem(d) for d in docs], tmp_path / "o", config=ExportConfig(formats=("txt",), keep_ids=True),
            secret=SECRET,
        )
    assert not (tmp_path / "o").exists()
    assert [p for p in tmp_path.iterdir()] == []


@pytest.mark.parametrize("formats", [(), ("pdf",)])
def test_unknown_formats_are_refused(formats: tuple[str, ...]) -> None:
    with pytest.raises(UnsupportedFormat):
        ExportConfig(formats=formats)


def test_spans_csv_provenance_and_formula_guard(tmp_path: Path) -> None:
    doc = Document(
        "d", "=cmd| Smith 123", (Span(0, 4, "NAME", "human:ann"), Span(6, 11, "DOCTOR", "crf:v3", 0.8), Span(12, 15, "ID", "rule:mrn")),
        {"model_version": "v3"},
    )
    path = tmp_path / "s.csv"
    assert write_spans_csv(path, [doc], {"d": ["tag", "surrogate", "redact"]}) == 3
    rows = list(csv.DictReader(open(path, newline="", encoding="utf-8")))
    assert [(r["author"], r["model_version"], r["operator"]) for r in rows] == [
        ("ann", "v3", "tag"), ("", "v3", "surrogate"), ("", "v3", "redact"),
    ]
    assert rows[0]["text"] == "'=cmd"


def test_brat_export_refuses_labels_with_spaces(tmp_path: Path) -> None:
    doc = Document("d", "Ann was here", (Span(0, 3, "MY LABEL"),))
    config = ExportConfig(OperatorConfig(default=OperatorSpec("tag")), formats=("brat",))
    with pytest.raises(CorpusFormatError):
        export_corpus([ExportItem(doc)], tmp_path / "o", config=config, secret=SECRET)
    assert list(tmp_path.iterdir()) == []


def test_conll_refuses_ids_with_tabs(tmp_path: Path) -> None:
    with pytest.raises(CorpusFormatError):
        write_conll(tmp_path / "c.conll", [Document("a\tb", "x")])


def test_tag_mode_export(tmp_path: Path, notes) -> None:
    config = ExportConfig(OperatorConfig(default=OperatorSpec("tag")), formats=("jsonl",))
    result = export_corpus([ExportItem(notes[0])], tmp_path / "t", config=config, secret=SECRET)
    (doc,) = read_jsonl(result.path / "corpus.jsonl")
    assert all(doc.text[s.start : s.end] == f"[**{s.label}**]" for s in doc.spans)
