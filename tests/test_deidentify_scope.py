"""``deidentify`` in patient and corpus scope (issue 14): a name the model tagged
confidently in one note is masked in the patient's (or every) other note.

The model's predictions are fixed here (a monkeypatched ``predict``), so the
planted cases test the scope logic, not how well a tiny CRF tags; the Dask
engine's agreement with the local one is in ``test_batch_dask.py``.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from deid_core.cli import main
from deid_core.corpus import read_jsonl, write_jsonl
from deid_core.engine.model import DeidModel, TrainConfig, train_model
from deid_core.engine.propagate import find_spans, known_index, known_phi_items, select_new
from deid_core.protect.batch import join_seeds, known_from_seeds, seeds_digest
from deid_core.protect.deidentify import Deidentifier
from deid_core.schemes import load_scheme
from deid_core.spans import Document, Span, sort_spans
from deid_core.synthetic import generate_notes

SECRET = bytes.fromhex("0f1e2d3c4b5a69788796a5b4c3d2e1f0" * 2)

NAME = "Zebediah Quartermaine"
LOW = "Ophelia Wintergreen"
NOTES = [
    # (id, patient, text, [(string, label, score)] the model "tags")
    ("a1", "P1", f"{NAME} was admitted to the ward. MRN 88231944 on file.",
     [(NAME, "PATIENT", 0.99), ("88231944", "MEDICALRECORD", 0.97)]),
    ("a2", "P1", "QUARTERMAINE called back; reply to zquartermaine@mercy.org about chart 8823-1944.", []),
    ("a3", "P1", "Seen with Mr. Quartermaine, who is stable.", []),
    ("b1", "P2", "Package left by Quartermaine at the desk.", []),
    ("c1", "P3", f"{LOW} reports pain.", [(LOW, "PATIENT", 0.5)]),
    ("c2", "P3", "Wintergreen reports less pain.", []),
    ("d1", "P4", "Follow-up with Zelda Brightwater next week.", []),
    ("d2", "P4", "Brightwater is better.", []),
]


def _docs() -> list[Document]:
    out = []
    for doc_id, patient, text, _ in NOTES:
        meta: dict = {"patient_id": patient}
        if doc_id == "d1":  # from the record, not tagged by the model
            meta["known_phi"] = [{"label": "PATIENT", "value": "Zelda Brightwater"}]
        out.append(Document(doc_id, text, (), meta))
    return out


def _tagged(doc_id: str, text: str) -> tuple[Span, ...]:
    spans = []
    for did, _, _, tags in NOTES:
        if did == doc_id:
            for value, label, score in tags:
                start = text.index(value)
                spans.append(Span(start, start + len(value), label, "crf:test", score))
    return tuple(spans)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = train_model(generate_notes(10, seed=3), lang="en", scheme=load_scheme("i2b2_2014"),
                        config=TrainConfig(max_iterations=10))
    return model.save(tmp_path_factory.mktemp("model") / "m")


@pytest.fixture()
def fixed_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model tags exactly the planted spans (plus what ``known_phi`` adds)."""
    real = DeidModel.predict

    def predict(self, doc, bias=0.0):  # type: ignore[no-untyped-def]
        pred = real(self, doc.with_meta(known_phi=None), bias)
        tagged = _tagged(doc.id, doc.text)
        items = known_phi_items(doc.meta, doc_id=doc.id)
        found = list(find_spans(doc.text, tagged, known_index(items, self.scheme, lang=self.lang),
                                self.scheme.name)) if items else []
        return dataclasses.replace(pred, spans=tuple(sort_spans([*tagged, *select_new(tagged, found)])))

    monkeypatch.setattr(DeidModel, "predict", predict)


def _run(model_dir: Path, tmp_path: Path, scope: str, *extra: str) -> tuple[int, dict[str, str], list, dict]:
    src = tmp_path / "in.jsonl"
    write_jsonl(src, _docs())
    out = tmp_path / f"out-{scope}-{len(extra)}.jsonl"
    (tmp_path / "secret").write_text(SECRET.hex())
    rc = main(["deidentify", "--model", str(model_dir), "--input", str(src), "--output", str(out),
               "--scope", scope, "--keep-ids", "--secret-file", str(tmp_path / "secret"), *extra])
    texts = {r.id: r.text for r in read_jsonl(out)}
    masked_path = Path(f"{out}.masked.jsonl")
    masked = [json.loads(x) for x in masked_path.read_text().splitlines()] if masked_path.exists() else []
    rejects = {json.loads(x)["record"]: json.loads(x) for x in Path(f"{out}.rejects.jsonl").read_text().splitlines()}
    return rc, texts, masked, rejects


def _has(text: str, word: str) -> bool:
    return re.search(re.escape(word), text, re.IGNORECASE) is not None


def test_document_scope_leaves_other_notes_alone(model_dir, tmp_path, fixed_model, capsys):
    rc, texts, masked, rejects = _run(model_dir, tmp_path, "document")
    assert rc == 0 and not rejects and not masked
    assert "QUARTERMAINE" in texts["a2"] and "Quartermaine" in texts["a3"]


def test_patient_scope_masks_the_patients_other_notes(model_dir, tmp_path, fixed_model, capsys):
    rc, texts, masked, rejects = _run(model_dir, tmp_path, "patient")
    assert rc == 0 and not rejects
    for doc_id in ("a1", "a2", "a3"):
        assert not _has(texts[doc_id], "quartermaine"), doc_id
    assert "88231944" not in texts["a2"] and "8823-1944" not in texts["a2"]  # digits of the MRN
    # Another patient's note is outside the patient scope.
    assert "Quartermaine" in texts["b1"]
    # A tag below the seed threshold does not seed; the record's known_phi does.
    assert "Wintergreen" in texts["c2"]
    assert "Brightwater" not in texts["d2"]
    # Listed with original ids, offsets and labels (no text).
    listed = {(m["id"], m["label"]) for m in masked}
    assert {("a2", "PATIENT"), ("a2", "MEDICALRECORD"), ("a3", "PATIENT"), ("d2", "PATIENT")} <= listed
    assert not any(m["id"] == "b1" for m in masked)
    assert all(set(m) == {"id", "start", "end", "label"} for m in masked)
    summary = json.loads(capsys.readouterr().out)
    assert summary["scope"] == "patient" and summary["masked_per_label"]["PATIENT"] >= 3


def test_same_surrogate_across_the_patients_notes(model_dir, tmp_path, fixed_model, capsys):
    _, texts, _, _ = _run(model_dir, tmp_path, "patient")
    surname = texts["a1"].split(" was admitted")[0].split()[-1]
    assert surname.lower() != "quartermaine"
    assert texts["a2"].startswith(surname.upper()) and surname in texts["a3"]


def test_corpus_scope_masks_every_note(model_dir, tmp_path, fixed_model, capsys):
    rc, texts, masked, rejects = _run(model_dir, tmp_path, "corpus")
    assert rc == 0 and not rejects
    assert not any(_has(t, "quartermaine") for t in texts.values())
    assert any(m["id"] == "b1" for m in masked)


def test_seed_threshold_is_a_setting(model_dir, tmp_path, fixed_model, capsys):
    _, texts, masked, _ = _run(model_dir, tmp_path, "patient", "--seed-min-score", "0.4")
    assert "Wintergreen" not in texts["c2"] and any(m["id"] == "c2" for m in masked)


def test_a_note_that_still_leaks_in_scope_is_rejected(model_dir, tmp_path, fixed_model, capsys):
    """Masking off (``--no-propagate``), the patient-scope leak check still sees the name."""
    rc, texts, masked, rejects = _run(model_dir, tmp_path, "patient", "--no-propagate")
    assert rc == 4 and {"a2", "a3"} <= set(rejects) and "b1" not in rejects
    assert all(h["label"] in ("PATIENT", "MEDICALRECORD") for h in rejects["a2"]["hits"])
    assert "a2" not in texts and not masked


def test_library_needs_the_first_pass(model_dir, fixed_model):
    proc = Deidentifier.from_model_dir(str(model_dir), mode="surrogate", secret=SECRET, scope="patient")
    doc = _docs()[1]
    with pytest.raises(ValueError, match="gather"):
        proc.process(doc, patient_key="P1")
    known = proc.new_known()
    for d in _docs():
        proc.gather(known, d, patient_key=d.meta["patient_id"])
    outcome = proc.process(doc, patient_key="P1", known=known)
    assert outcome.record is not None and not _has(outcome.record["text"], "quartermaine")
    assert outcome.masked and all(label in ("PATIENT", "EMAIL", "MEDICALRECORD") for _, _, label in outcome.masked)


def test_seeds_are_confident_identifying_strings_and_digest_is_keyed(model_dir, fixed_model):
    proc = Deidentifier.from_model_dir(str(model_dir), mode="surrogate", secret=SECRET, scope="corpus")
    docs = _docs()
    assert proc.seeds(docs[0]) == [("PATIENT", NAME), ("MEDICALRECORD", "88231944")]
    assert proc.seeds(docs[4]) == []  # 0.5 < 0.9
    seeds = join_seeds([[(d.id, d.meta["patient_id"], label, v) for label, v in proc.seeds(d)] for d in docs])
    assert len(known_from_seeds(proc, seeds)) > 0
    assert seeds_digest(SECRET, seeds) != seeds_digest(b"another-secret-0123456789", seeds)


def test_second_pass_reuses_the_first_pass_spans(model_dir, tmp_path, fixed_model, monkeypatch, capsys):
    """Patient scope reads the input twice but tags each note once (``SpanReplay``)."""
    fixed = DeidModel.predict
    calls: list[str] = []

    def counting(self, doc, bias=0.0):  # type: ignore[no-untyped-def]
        calls.append(doc.id)
        return fixed(self, doc, bias)

    monkeypatch.setattr(DeidModel, "predict", counting)
    rc, texts, _, _ = _run(model_dir, tmp_path, "patient")
    assert rc == 0
    assert sorted(calls) == sorted(d for d, *_ in NOTES)  # once each, not twice
    assert json.loads(capsys.readouterr().out)["tagged_once"] == len(NOTES)
    assert not _has(texts["a3"], "quartermaine")  # the replayed spans still seed and mask


def test_span_replay_tags_again_a_note_it_did_not_record():
    from deid_core.protect.deidentify import SpanReplay

    a = Document("a", "Seen Ann Lee.", ())
    b = Document("b", "Call Bo Ray.", ())
    c = Document("c", "Met Cy Day.", ())
    replay = SpanReplay()
    replay.record(a, (Span(5, 8, "PATIENT", "crf:x", 0.875),))
    replay.record(c, ())  # the first pass failed on b, so b was never recorded
    replay.start_replay()
    assert replay.take(a) == (Span(5, 8, "PATIENT", "crf:x", 0.875),)
    assert replay.take(b) is None  # not the next recorded note: tagged again
    assert replay.take(Document("c", "Met Cy Day, now longer.", ())) is None  # another text
    assert replay.take(c) == ()
    assert replay.take(a) is None and replay.reused == 2
    replay.close()
