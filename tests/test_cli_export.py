from __future__ import annotations

import dataclasses
import json
import stat
from pathlib import Path

import pytest

from deid_core.cli import main
from deid_core.cli.export import read_secret
from deid_core.corpus import read_jsonl, write_jsonl
from deid_core.engine.model import DeidModel, TrainConfig, train_model
from deid_core.protect.export import verify_manifest
from deid_core.protect.surrogate_map import pseudonym
from deid_core.spans import Document, Span
from deid_core.synthetic import generate_notes


@pytest.fixture(scope="module")
def notes() -> list[Document]:
    return generate_notes(18, seed=21)


@pytest.fixture(scope="module")
def model_dir(notes: list[Document], tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = train_model(notes[:12], lang="en", config=TrainConfig(max_iterations=20))
    return model.save(tmp_path_factory.mktemp("model") / "m")


@pytest.fixture()
def corpus(notes: list[Document], tmp_path: Path) -> Path:
    path = tmp_path / "in.jsonl"
    write_jsonl(path, notes[12:])
    return path


@pytest.fixture()
def perfect_model(monkeypatch: pytest.MonkeyPatch, notes: list[Document]) -> list[float]:
    """The real model, with its spans replaced by the input's gold spans.

    These tests are about the command, not about model quality: a model that
    misses a second mention of a name makes the command refuse to write (see
    ``test_deidentify_stops_on_a_leak``), which must not depend on how well
    a 30-iteration CRF happens to do. Returns the biases the model was called with.
    """
    real_predict = DeidModel.predict
    biases: list[float] = []
    # deidentify reads notes without their spans (as the Dask path does): look the gold up.
    gold = {d.id: d.spans for d in notes}

    def predict(self, doc, bias=0.0):  # type: ignore[no-untyped-def]
        biases.append(bias)
        pred = real_predict(self, doc, bias)
        spans = tuple(Span(s.start, s.end, s.label, f"crf:{self.version}", s.score) for s in gold[doc.id])
        return dataclasses.replace(pred, spans=spans)

    monkeypatch.setattr(DeidModel, "predict", predict)
    return biases


@pytest.mark.parametrize("mode", ["surrogate", "tag", "redact"])
def test_deidentify_writes_shared_jsonl_without_original_text(
    model_dir: Path, corpus: Path, tmp_path: Path, mode: str, capsys: pytest.CaptureFixture[str],
    perfect_model: list[float],
) -> None:
    out = tmp_path / "out.jsonl"
    argv = ["deidentify", "--model", str(model_dir), "--input", str(corpus), "--output", str(out),
            "--mode", mode, "--bias", "0.5"]
    if mode == "surrogate":
        # A fixed secret keeps the surrogates (and so this test) deterministic: with a random
        # one, a surrogate could by chance equal another original name in the same note.
        fixed = tmp_path / "fixed.secret"
        fixed.write_text("5e" * 32, encoding="ascii")
        argv += ["--secret-file", str(fixed)]
    rc = main(argv)
    assert rc == 0, capsys.readouterr().err
    assert set(perfect_model) == {0.5}
    secret = read_secret(fixed if mode == "surrogate" else Path(f"{out}.secret"))
    # Ids and patient keys are HMAC pseudonyms by default (issue 14).
    originals = {pseudonym(secret, "document", d.id): d for d in read_jsonl(corpus)}
    result = read_jsonl(out)
    assert [d.id for d in result] == list(originals)
    version = DeidModel.load(model_dir).version
    for doc in result:
        orig = originals[doc.id]
        assert doc.meta["original_id"] == doc.id
        assert doc.meta["patient_key"] == pseudonym(secret, "patient", orig.meta["patient_id"])
        assert doc.meta["model_version"] == version and doc.meta["bias"] == 0.5
        assert [s.label for s in doc.spans] == [s.label for s in orig.spans]
        assert all(s.source == f"crf:{version}" for s in doc.spans)
        for span in orig.spans:
            value = orig.text[span.start : span.end]
            if span.label in ("PATIENT", "MEDICALRECORD", "PHONE") and len(value) > 4:
                assert value not in doc.text
    assert Path(f"{out}.rejects.jsonl").read_text() == ""
    if mode != "surrogate":
        secret = Path(f"{out}.secret")
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600 and len(read_secret(secret)) == 32
        assert "created secret" in capsys.readouterr().err


def test_rerun_reuses_the_secret_and_gives_identical_output(model_dir: Path, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    # The real model's own predictions; --allow-leaks because a missed second mention is
    # the model's business here, determinism is what is tested.
    args = ["deidentify", "--model", str(model_dir), "--input", str(corpus), "--allow-leaks",
            "--output", str(out)]
    assert main(args) == 0
    first = out.read_bytes()
    assert main(args) == 0
    assert out.read_bytes() == first
    other = tmp_path / "other.jsonl"
    assert main(args[:-1] + [str(other), "--secret-file", f"{out}.secret"]) == 0
    assert other.read_bytes() == first


def test_deidentify_stops_on_a_leak(
    model_dir: Path, corpus: Path, tmp_path: Path, monkeypatch, capsys, perfect_model: list[float]
) -> None:
    """A model that misses one mention of a name it found elsewhere in the note."""
    real_predict = DeidModel.predict  # the perfect model of the fixture

    def forgetful(self, doc, bias=0.0):  # type: ignore[no-untyped-def]
        pred = real_predict(self, doc, bias)
        names = [s for s in pred.spans if s.label in ("PATIENT", "DOCTOR") and len(s) > 5]
        for a in names:
            twin = [s for s in names if s is not a and doc.text[s.start:s.end] == doc.text[a.start:a.end]]
            if twin:
                return dataclasses.replace(pred, spans=tuple(s for s in pred.spans if s is not twin[0]))
        return pred

    monkeypatch.setattr(DeidModel, "predict", forgetful)
    out = tmp_path / "leaky.jsonl"
    # Document scope: in the default patient scope the name tagged in the patient's other
    # notes would mask the forgotten mention (tests/test_deidentify_scope.py).
    rc = main(["deidentify", "--model", str(model_dir), "--input", str(corpus), "--output", str(out), "--mode", "tag",
               "--scope", "document"])
    captured = capsys.readouterr()
    # Like the Dask path (issue 14): clean notes written, leaking ones to rejects, exit 4.
    assert rc == 4
    rejects = [json.loads(line) for line in Path(f"{out}.rejects.jsonl").read_text().splitlines()]
    written = read_jsonl(out)
    assert rejects and len(written) + len(rejects) == len(read_jsonl(corpus))
    for r in rejects:
        assert r["reason"].startswith("leak check:") and r["hits"]
        assert {"start", "end", "field", "label", "match"} == set(r["hits"][0])
        assert r["hits"][0]["label"] in ("PATIENT", "DOCTOR")
    summary = json.loads(captured.out)
    assert summary["rejected_by_leak_check"] == len(rejects) and summary["documents"] == len(written)
    assert main(["deidentify", "--model", str(model_dir), "--input", str(corpus), "--output", str(out),
                 "--mode", "tag", "--allow-leaks", "--scope", "document"]) == 0
    assert len(read_jsonl(out)) == len(read_jsonl(corpus))


@pytest.mark.parametrize(
    ("content", "ok"),
    [("00" * 16, True), ("short", False), ("a long enough passphrase text", True)],
)
def test_secret_files(tmp_path: Path, content: str, ok: bool) -> None:
    from deid_core.errors import DeidError

    path = tmp_path / "s"
    path.write_text(content)
    if ok:
        assert len(read_secret(path)) >= 16
    else:
        with pytest.raises(DeidError):
            read_secret(path)


def _store(db_url: str, notes: list[Document], tmp_path: Path) -> None:
    gold, preds = tmp_path / "gold.jsonl", tmp_path / "preds.jsonl"
    write_jsonl(gold, notes[:6])
    write_jsonl(preds, notes[6:9])
    assert main(["project", "create", "p1", "--db", db_url]) == 0
    assert main(["import", "--project", "p1", "--format", "jsonl", "--annotations", "gold", "--quiet",
                 "--db", db_url, str(gold)]) == 0
    assert main(["import", "--project", "p1", "--format", "jsonl", "--annotations", "predictions",
                 "--quiet", "--db", db_url, str(preds)]) == 0


def test_export_from_the_store(db_url: str, notes: list[Document], tmp_path: Path, capsys, monkeypatch) -> None:
    from deid_core.store import open_store
    from deid_core.store.audit import list_events
    from deid_core.store.users import create_user

    monkeypatch.setenv("DEID_DATA_DIR", str(tmp_path))
    _store(db_url, notes, tmp_path)
    from people import add_users

    add_users(open_store(db_url), admins=("alice",))  # --actor must name a workbench user
    out = tmp_path / "release"
    rc = main(["export", "--project", "p1", "--output", str(out), "--format", "jsonl,brat",
               "--format", "spans-csv", "--db", db_url, "--actor", "alice"])
    assert rc == 0, capsys.readouterr().err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["documents"] == 6 and manifest["scope"]["skipped_unreviewed"] == 3
    assert manifest["project"] == "p1" and manifest["actor"] == "alice"
    assert manifest["formats"] == ["jsonl", "brat", "spans-csv"]
    assert verify_manifest(out) == []
    exported = read_jsonl(out / "corpus.jsonl")
    # Patient keys, ids and sources are HMAC pseudonyms by default (issue 14).
    originals = {d.meta["patient_id"] for d in notes[:6]}
    keys = {d.meta["patient_key"] for d in exported}
    assert len(keys) == len(originals) and all(k.startswith("pt-") for k in keys)
    assert not ({d.id for d in exported} | keys) & (originals | {d.id for d in notes})
    assert manifest["ids"]["pseudonymised"] is True
    events = list_events(open_store(db_url), action="export")
    assert len(events) == 1 and events[0].actor == "alice" and events[0].after["documents"] == 6
    # Unreviewed documents need an explicit --yes.
    capsys.readouterr()
    assert main(["export", "--project", "p1", "--output", str(tmp_path / "all"), "--include-unreviewed",
                 "--db", db_url]) == 1
    assert "confirm" in capsys.readouterr().err and not (tmp_path / "all").exists()
    refused = list_events(open_store(db_url), action="export_refused")
    assert len(refused) == 1 and refused[0].after["reason"] == "ExportRefused"
    assert main(["export", "--project", "p1", "--output", str(tmp_path / "all"), "--include-unreviewed",
                 "--yes", "--db", db_url, "--mode", "tag"]) == 0
    manifest = json.loads((tmp_path / "all" / "manifest.json").read_text())
    assert manifest["documents"] == 9 and manifest["scope"]["unreviewed_confirmed"] is True
    # The surrogate mapping goes to admins only.
    engine = open_store(db_url)
    create_user(engine, "bob", "a-long-password-1", role="reviewer")
    create_user(engine, "root", "a-long-password-2", role="admin")
    m = tmp_path / "map.jsonl"
    assert main(["export", "--project", "p1", "--output", str(tmp_path / "r2"), "--db", db_url,
                 "--actor", "bob", "--mapping-out", str(m)]) == 1
    assert not m.exists() and not (tmp_path / "r2").exists()
    assert main(["export", "--project", "p1", "--output", str(tmp_path / "r3"), "--db", db_url,
                 "--actor", "root", "--mapping-out", str(m)]) == 0
    entries = [json.loads(line) for line in m.read_text().splitlines()]
    assert entries and {"key", "scope", "kind", "label", "surrogate"} == set(entries[0])
    assert [e.actor for e in list_events(engine, action="export_mapping")] == ["root"]
    # One secret per project, created at the first export: every export agrees.
    (secret_file,) = (tmp_path / "secrets").iterdir()
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    # The app's Export page reads the same secret for this project.
    from deid_core.store.repository import get_project
    from deid_core.ui.exporting import project_secret

    assert project_secret(get_project(engine, "p1").id) == read_secret(secret_file)
    r3 = read_jsonl(tmp_path / "r3" / "corpus.jsonl")
    assert read_jsonl(tmp_path / "release" / "corpus.jsonl") == r3
    assert main(["export", "--project", "p1", "--output", str(tmp_path / "r4"), "--db", db_url,
                 "--secret-file", str(secret_file)]) == 0
    assert read_jsonl(tmp_path / "r4" / "corpus.jsonl") == r3
    (tmp_path / "other.secret").write_text("ab" * 32)
    assert main(["export", "--project", "p1", "--output", str(tmp_path / "r5"), "--db", db_url,
                 "--secret-file", str(tmp_path / "other.secret")]) == 0
    assert read_jsonl(tmp_path / "r5" / "corpus.jsonl") != r3


def test_export_refuses_an_existing_folder(db_url: str, notes: list[Document], tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("DEID_DATA_DIR", str(tmp_path))
    _store(db_url, notes, tmp_path)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("keep")
    assert main(["export", "--project", "p1", "--output", str(tmp_path / "busy"), "--db", db_url]) == 1
    assert "not an empty folder" in capsys.readouterr().err
    assert (tmp_path / "busy" / "x").read_text() == "keep"


@pytest.mark.parametrize(
    ("yaml_text", "rc"),
    [
        ("per_label:\n  DATE: {kind: tag, template: '<{label}>'}\n", 0),
        ("per_label:\n  DATE: shred\n", 1),
        ("- not a mapping\n", 1),
    ],
)
def test_deidentify_with_an_operators_file(
    model_dir: Path, corpus: Path, tmp_path: Path, perfect_model: list[float], yaml_text: str, rc: int, capsys
) -> None:
    ops = tmp_path / "ops.yaml"
    ops.write_text(yaml_text)
    out = tmp_path / "o.jsonl"
    assert main(["deidentify", "--model", str(model_dir), "--input", str(corpus), "--output", str(out),
                 "--operators", str(ops)]) == rc
    if rc:
        assert capsys.readouterr().err.startswith("error: ") and not out.exists()
        return
    for doc in read_jsonl(out):
        for span in doc.spans:
            text = doc.text[span.start : span.end]
            assert (text == "<DATE>") == (span.label == "DATE")
