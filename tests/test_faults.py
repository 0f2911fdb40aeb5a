"""Fault injection (issue 17): each fault gives its exit code and error code, leaks no note
text to stdout, stderr or the log, and leaves every row count as it was.

The notes carry a marker (names, an MRN, a date of birth) that must never show up in any
output. Runs on SQLite and PostgreSQL through the ``db_url`` fixture.
"""

from __future__ import annotations

import json
import logging
import os
import re
import zipfile
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from people import add_users
from sqlalchemy import func, select

from deid_core.cli import main
from deid_core.errors import DeidError, PermissionDenied, StoreError, TooManyAttempts
from deid_core.spans import Document, Span
from deid_core.store import open_store, users
from deid_core.store import repository as repo
from deid_core.store.audit import list_events
from deid_core.store.models import Base

#: Text that must never leave the store: a name, an MRN and a date of birth.
SECRET = "Zebulon Quixote MRN 8675309 DOB 1961-04-13"
LEAK_WORDS = ("Zebulon", "Quixote", "8675309", "1961-04-13")
PROJECT = "f"


def note(i: int, text: str | None = None) -> Document:
    body = text if text is not None else f"Pt {SECRET} visit {i}."
    return Document(f"n{i}", body, (Span(3, 18, "PATIENT"),) if text is None else ())


def counts(engine) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        return {t.name: int(conn.execute(select(func.count()).select_from(t)).scalar() or 0)
                for t in Base.metadata.sorted_tables if t.name != "login_attempts"}


def assert_no_leak(*outputs: str) -> None:
    for out in outputs:
        for word in LEAK_WORDS:
            assert word not in out, f"note text {word!r} leaked"


@pytest.fixture
def engine(db_url):  # type: ignore[no-untyped-def]
    engine = open_store(db_url)
    add_users(engine, admins=("ada",), reviewers=("rita",))
    repo.create_project(engine, PROJECT)
    repo.import_documents(engine, PROJECT, [note(0), note(1)], annotations="gold")
    repo.import_documents(engine, PROJECT, [note(2)])
    yield engine
    engine.dispose()


def cli(argv: list[str], capsys, caplog) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        rc = main(argv)
    captured = capsys.readouterr()
    assert_no_leak(captured.out, captured.err, caplog.text)
    return rc, captured.out, captured.err


def write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def jsonl_line(**doc: object) -> str:
    return json.dumps(doc, ensure_ascii=True) + "\n"


# ------------------------------------------------------------------ import faults through the CLI

def _deep(tmp: Path) -> Path:
    return write(tmp / "deep.jsonl",
                 '{"id": "x", "text": "' + SECRET + '", "meta": ' + "[" * 200_000 + "]" * 200_000 + "}\n")


def _brat_txt_only(tmp: Path) -> Path:
    d = tmp / "brat"
    d.mkdir()
    write(d / "a.txt", f"Pt {SECRET}.")
    write(d / "a.ann", "T1\tPATIENT 3 10\tZebulon\n")
    write(d / "b.txt", f"Seen {SECRET}.")  # no b.ann
    return d


def _brat_ann_only(tmp: Path) -> Path:
    d = tmp / "annonly"
    d.mkdir()
    write(d / "a.ann", "T1\tPATIENT 3 10\tZebulon\n")
    return d


IMPORT_FAULTS: list[tuple[str, str, str, Callable[[Path], Path], str]] = [
    # (case, format, annotations, make input, error code)
    ("nul-byte", "jsonl", "none",
     lambda t: write(t / "nul.jsonl", jsonl_line(id="x", text=f"{SECRET}\u0000 end")), "E_NUL"),
    ("id-over-500", "jsonl", "none",
     lambda t: write(t / "long.jsonl", jsonl_line(id="Zebulon" * 80, text=SECRET)), "E_TOO_LONG"),
    ("lone-surrogate", "jsonl", "none",
     lambda t: write(t / "sur.jsonl", '{"id": "x", "text": "' + SECRET + '\\ud800"}\n'), "E_UNICODE"),
    ("nan-score", "jsonl", "predictions",
     lambda t: write(t / "nan.jsonl", '{"id": "x", "text": "' + SECRET + '", "spans": [{"start": 3,'
                     ' "end": 10, "label": "PATIENT", "score": NaN}]}\n'), "E_NAN"),
    ("infinity", "jsonl", "predictions",
     lambda t: write(t / "inf.jsonl", '{"id": "x", "text": "' + SECRET + '", "spans": [{"start": 3,'
                     ' "end": 10, "label": "PATIENT", "score": 1e999}]}\n'), "E_NAN"),
    ("nested-200k", "jsonl", "none", _deep, "E_JSON_DEPTH"),
    ("empty-jsonl", "jsonl", "none", lambda t: write(t / "empty.jsonl", ""), "E_EMPTY"),
    ("header-only-csv", "csv", "none", lambda t: write(t / "h.csv", "id,text\n"), "E_EMPTY"),
    ("brat-only-ann", "brat", "gold", _brat_ann_only, "E_EMPTY"),
    ("brat-txt-without-ann-gold", "brat", "gold", _brat_txt_only, "E_MISSING_ANN"),
    ("label-outside-scheme", "jsonl", "gold",
     lambda t: write(t / "lab.jsonl", jsonl_line(id="x", text=SECRET, spans=[
         {"start": 0, "end": 7, "label": "<img src=x onerror=alert(1)>"}])), "E_LABEL"),
    ("latin1", "txt", "none", lambda t: write(t / "l.txt", SECRET.encode() + b" \xe9"), "E_FORMAT"),
]


@pytest.mark.parametrize(("case", "fmt", "mode", "make", "code"), IMPORT_FAULTS,
                         ids=[c[0] for c in IMPORT_FAULTS])
def test_import_fault(engine, db_url, tmp_path, capsys, caplog, case, fmt, mode, make, code) -> None:  # type: ignore[no-untyped-def]
    before = counts(engine)
    path = make(tmp_path)
    rc, out, err = cli(["import", "--project", PROJECT, "--format", fmt, "--annotations", mode,
                        "--quiet", str(path), "--db", db_url], capsys, caplog)
    assert rc == 1, err
    assert f"[{code}]" in err, err
    assert str(Path(path).name) in err  # names the file
    after = counts(engine)
    # Only the proof of local administration (an audit row, once per store) may be new.
    assert {k: v for k, v in after.items() if k not in ("audit_events", "store_settings")} == \
        {k: v for k, v in before.items() if k not in ("audit_events", "store_settings")}
    assert list_events(engine, action="import")[0].entity_id is not None
    assert len(list_events(engine, action="import")) == 2  # the fixture's two batches only


def test_label_error_lists_the_allowed_labels(engine, db_url, tmp_path, capsys, caplog) -> None:  # type: ignore[no-untyped-def]
    path = write(tmp_path / "lab.jsonl", jsonl_line(id="x", text=SECRET, spans=[
        {"start": 0, "end": 7, "label": "NOT_A_LABEL"}]))
    rc, _out, err = cli(["import", "--project", PROJECT, "--format", "jsonl", "--annotations",
                         "gold", "--quiet", str(path), "--db", db_url], capsys, caplog)
    assert rc == 1 and "NOT_A_LABEL" in err and "PATIENT" in err and "DATE" in err


def test_unique_violation_is_coded_and_quotes_nothing(engine, db_url, tmp_path, capsys, caplog, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Two imports of one file racing: the loser's insert hits the unique constraint."""
    path = write(tmp_path / "same.jsonl", jsonl_line(id="n0", text=f"Pt {SECRET} visit 0."))
    # As if another import committed the same note after this one looked.
    monkeypatch.setattr(repo, "_existing_keys", lambda *_a: ({}, set()))
    before = counts(engine)
    rc, _out, err = cli(["import", "--project", PROJECT, "--format", "jsonl", "--quiet", str(path),
                         "--db", db_url], capsys, caplog)
    assert rc == 1 and "[E_DB_UNIQUE]" in err and "DatabaseError" in err
    assert "parameters" not in err.lower()
    assert counts(engine)["documents"] == before["documents"]


def test_parallel_imports_of_one_file(engine, db_url, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Six imports of the same file at once: each either stores it, skips it as a duplicate,
    or fails with a coded error that quotes nothing; the note is stored once."""
    import threading

    path = write(tmp_path / "par.jsonl", "".join(
        jsonl_line(id=f"p{i}", text=f"Parallel {SECRET} {i}") for i in range(20)))
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            from deid_core.store.importers import import_paths

            import_paths(engine, PROJECT, [path], fmt="jsonl", actor="ada")
        except BaseException as exc:  # noqa: BLE001 - inspected below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for exc in errors:
        assert isinstance(exc, DeidError), type(exc)
        assert_no_leak(str(exc))
    assert repo.count_documents(engine, PROJECT) == 3 + 20


# ------------------------------------------------------------------ the boundary itself

def test_foreign_exception_shows_class_and_place_only(engine, db_url, tmp_path, capsys, caplog, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def boom(*_a, **_k):  # type: ignore[no-untyped-def]
        raise UnicodeEncodeError("utf-8", SECRET, 3, 4, f"cannot encode {SECRET}")

    monkeypatch.setattr("deid_core.store.importers.import_paths", boom)
    path = write(tmp_path / "ok.jsonl", jsonl_line(id="x", text="fine"))
    rc, _out, err = cli(["-v", "import", "--project", PROJECT, "--format", "jsonl", "--quiet",
                         str(path), "--db", db_url], capsys, caplog)
    assert rc == 3 and "[E_INTERNAL] UnicodeEncodeError" in err and "offset 3" in err
    assert "test_faults.py" in err  # the verbose traceback: frames, no messages


def test_library_database_errors_carry_no_parameters(engine) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy import insert

    from deid_core.store.engine import write_session
    from deid_core.store.models import DocumentRow

    row = {"project_id": 1, "external_id": "n0", "text": SECRET, "sha256": "0" * 64,
           "n_chars": len(SECRET), "meta": {}, "status": "new", "version": 0}
    with pytest.raises(DeidError) as caught:
        with write_session(engine) as s:
            s.execute(insert(DocumentRow), [row])
    assert caught.value.code == "E_DB_UNIQUE"
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert_no_leak(str(caught.value))


# ------------------------------------------------------------------ empty inputs elsewhere

@pytest.mark.parametrize("command", ["evaluate", "bias-sweep", "train"])
def test_empty_gold_is_an_error(engine, tmp_path, capsys, caplog, command) -> None:  # type: ignore[no-untyped-def]
    empty = write(tmp_path / "empty.jsonl", "")
    argv = {
        "evaluate": ["evaluate", "--gold", str(empty), "--pred", str(empty)],
        "bias-sweep": ["bias-sweep", "--model", str(Path(__file__).parent / "fixtures" / "model_v1_en"),
                       "--gold", str(empty)],
        "train": ["train", "--data", str(empty), "--out", str(tmp_path / "m")],
    }[command]
    rc, _out, err = cli(argv, capsys, caplog)
    assert rc == 1 and "[E_EMPTY]" in err and "empty.jsonl" in err
    assert not (tmp_path / "m").exists()


# ------------------------------------------------------------------ authorisation

def _doc(engine, external: str) -> int:  # type: ignore[no-untyped-def]
    return repo.find_document(engine, PROJECT, external)


REVIEWER_REFUSED: list[tuple[str, Callable[..., object]]] = [
    ("settings", lambda e: repo.update_project_settings(e, PROJECT, {"bias": 2.0}, actor="rita")),
    ("activate", lambda e: repo.activate_model_version(e, PROJECT, "v1", actor="rita")),
    ("register", lambda e: repo.register_model_version(e, PROJECT, version="v9", artifact_path="/x",
                                                       actor="rita")),
    ("set-role", lambda e: users.set_role(e, "rita", "admin", actor="rita")),
    ("create-user", lambda e: users.create_user(e, "eve", "long-password-9", role="admin",
                                                actor="rita")),
    ("deactivate", lambda e: users.set_active(e, "ada", False, actor="rita")),
    ("others-password", lambda e: users.reset_password(e, "ada", "long-password-9", actor="rita")),
    ("import", lambda e: repo.import_documents(e, PROJECT, [note(7)], actor="rita")),
    ("create-project", lambda e: repo.create_project(e, "mine", actor="rita")),
    ("queue-scores", lambda e: repo.set_queue_scores(e, PROJECT, "x", {}, actor="rita")),
    ("export", lambda e: __import__("deid_core.protect.export", fromlist=["x"]).export_project(
        e, PROJECT, "/nonexistent/out", secret=b"k" * 32, actor="rita")),
    ("unknown-user-save", lambda e: repo.save_review(e, _doc(e, "n2"), "mallory", [], 0)),
]


@pytest.mark.parametrize(("case", "call"), REVIEWER_REFUSED, ids=[c[0] for c in REVIEWER_REFUSED])
def test_library_refuses_without_the_role(engine, case, call) -> None:  # type: ignore[no-untyped-def]
    repo.register_model_version(engine, PROJECT, version="v1", artifact_path="/m")
    before = counts(engine)
    with pytest.raises(PermissionDenied) as refused:
        call(engine)
    assert refused.value.code == "E_FORBIDDEN"
    after = counts(engine)
    if case == "export":  # a refused export is audited (export_refused), nothing else is written
        assert after.pop("audit_events") == before.pop("audit_events") + 1
    assert after == before


def test_deactivation_and_demotion_take_effect_at_once(engine) -> None:  # type: ignore[no-untyped-def]
    doc_id = _doc(engine, "n2")
    users.set_active(engine, "rita", False, actor="ada")
    with pytest.raises(PermissionDenied):
        repo.save_review(engine, doc_id, "rita", [Span(3, 18, "PATIENT")], 0)
    users.set_active(engine, "rita", True, actor="ada")
    assert repo.save_review(engine, doc_id, "rita", [Span(3, 18, "PATIENT")], 0).ok
    users.reset_password(engine, "rita", "her-own-new-pass", actor="rita")  # her own: allowed
    add_users(engine, admins=("bo",))
    users.set_role(engine, "bo", "reviewer", actor="ada")
    with pytest.raises(PermissionDenied):
        repo.update_project_settings(engine, PROJECT, {"bias": 1.0}, actor="bo")


def test_cli_needs_the_admin_secret(engine, db_url, tmp_path, capsys, caplog, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = write(tmp_path / "ok.jsonl", jsonl_line(id="ok", text="A harmless note."))
    argv = ["import", "--project", PROJECT, "--format", "jsonl", "--quiet", str(path), "--db", db_url]
    # First use records the secret's fingerprint; the audit names the OS user as local admin.
    rc, _out, err = cli(argv, capsys, caplog)
    assert rc == 0, err
    assert list_events(engine, action="import")[0].actor.startswith("local-admin:")
    assert list_events(engine, action="store.admin_secret")
    before = counts(engine)
    # Another OS user: a different secret file. Refused, nothing written.
    monkeypatch.setenv("DEID_ADMIN_SECRET", str(write(tmp_path / "other.secret", "cd" * 32)))
    rc, _out, err = cli([*argv[:-2], "--db", db_url], capsys, caplog)
    assert rc == 1 and "[E_FORBIDDEN]" in err
    # A secret file this OS user cannot read.
    unreadable = write(tmp_path / "locked.secret", "ef" * 32)
    unreadable.chmod(0)
    monkeypatch.setenv("DEID_ADMIN_SECRET", str(unreadable))
    if os.access(unreadable, os.R_OK):  # running as root: permissions do not bind
        monkeypatch.setenv("DEID_ADMIN_SECRET", str(tmp_path / "missing-dir" / "x" / "s"))
        (tmp_path / "missing-dir").write_text("a file where a folder should be")
    rc, _out, err = cli(argv, capsys, caplog)
    assert rc == 1 and "[E_FORBIDDEN]" in err
    assert counts(engine) == before


def test_cli_actor_only_narrows(engine, db_url, tmp_path, capsys, caplog) -> None:  # type: ignore[no-untyped-def]
    before = counts(engine)
    for actor in ("rita", "nobody"):  # a reviewer, and a name that is no user at all
        rc, _out, err = cli(["project", "create", "p2", "--db", db_url, "--actor", actor],
                            capsys, caplog)
        assert rc == 1 and "[E_FORBIDDEN]" in err
    after = counts(engine)
    assert after["projects"] == before["projects"]
    rc, _out, err = cli(["project", "create", "p2", "--db", db_url, "--actor", "ada"], capsys, caplog)
    assert rc == 0, err
    assert list_events(engine, action="project.create")[0].actor == "ada"


# ------------------------------------------------------------------ sign-in throttling

@pytest.fixture
def cheap_hashing(monkeypatch):  # type: ignore[no-untyped-def]
    """Production argon2 costs ~0.3 s a hash; the throttle logic is the same."""
    from argon2 import PasswordHasher

    cheap = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    monkeypatch.setattr(users, "_HASHER", cheap)
    monkeypatch.setattr(users, "_DUMMY_HASH", cheap.hash("dummy-password"))


def test_login_backoff_and_lockout(engine, caplog, cheap_hashing) -> None:  # type: ignore[no-untyped-def]
    from deid_core.store.throttle import set_throttle_settings, sign_in

    users.create_user(engine, "tom", "right-password-1", actor="ada")
    settings = set_throttle_settings(engine, {"lockout_failures": 5, "free_failures": 2,
                                              "base_delay_s": 1.0, "max_delay_s": 8.0,
                                              "window_s": 600.0, "lockout_s": 600.0}, actor="ada")
    assert list_events(engine, action="settings.login_throttle")[0].actor == "ada"
    with pytest.raises(PermissionDenied):
        set_throttle_settings(engine, {"lockout_failures": 1000}, actor="rita")
    t0 = datetime(2026, 11, 24, 12, 0, tzinfo=timezone.utc)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="deid_core.store.throttle"):
        assert sign_in(engine, "tom", "wrong-1", client="10.0.0.9", now=t0) is None
        assert sign_in(engine, "tom", "wrong-2", client="10.0.0.9", now=t0) is None
        assert sign_in(engine, "tom", "wrong-3", client="10.0.0.9", now=t0) is None
        # Third failure: the next attempt must wait 1 s, the right password included.
        with pytest.raises(TooManyAttempts) as wait:
            sign_in(engine, "tom", "right-password-1", client="10.0.0.9", now=t0)
        assert wait.value.code == "E_THROTTLED" and 0 < wait.value.retry_after <= 1.0
        t = t0 + timedelta(seconds=1.5)
        assert sign_in(engine, "tom", "wrong-4", client="10.0.0.9", now=t) is None
        with pytest.raises(TooManyAttempts):  # now 2 s
            sign_in(engine, "tom", "wrong", client="10.0.0.9", now=t + timedelta(seconds=1.5))
        t += timedelta(seconds=2.5)
        assert sign_in(engine, "tom", "wrong-5", client="10.0.0.9", now=t) is None  # 5th: locked
        # Locked out: the right password is refused, from another client too.
        for client, later in (("10.0.0.9", 60), ("10.9.9.9", 300)):
            with pytest.raises(TooManyAttempts, match="locked"):
                sign_in(engine, "tom", "right-password-1", client=client,
                        now=t + timedelta(seconds=later))
        assert list_events(engine, action="login.lockout")
        # After the lockout the right password works and clears the count.
        later = t + timedelta(seconds=settings.lockout_s + 1)
        assert sign_in(engine, "tom", "right-password-1", client="10.0.0.9", now=later) is not None
        assert sign_in(engine, "tom", "wrong-6", client="10.0.0.1", now=later) is None
    assert "'tom'" in caplog.text
    for password in ("wrong-1", "wrong-5", "right-password-1"):
        assert password not in caplog.text


def test_throttle_per_client_across_usernames(engine, cheap_hashing) -> None:  # type: ignore[no-untyped-def]
    from deid_core.store.throttle import set_throttle_settings, sign_in

    set_throttle_settings(engine, {"lockout_failures": 3, "free_failures": 0}, actor="ada")
    t0 = datetime(2026, 11, 24, 12, 0, tzinfo=timezone.utc)
    for i, name in enumerate(("a1", "a2", "a3")):
        assert sign_in(engine, name, "x", client="evil", now=t0 + timedelta(seconds=100 * i)) is None
    with pytest.raises(TooManyAttempts, match="locked"):
        sign_in(engine, "a4", "x", client="evil", now=t0 + timedelta(seconds=301))
    assert sign_in(engine, "a4", "x", client="elsewhere", now=t0 + timedelta(seconds=301)) is None


# ------------------------------------------------------------------ skip and the manifest

def test_skip_refused_on_a_reviewed_note_and_counted_in_the_manifest(engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from deid_core.protect.export import export_project

    reviewed = _doc(engine, "n0")
    before = counts(engine)
    with pytest.raises(StoreError) as refused:
        repo.set_status(engine, reviewed, "skipped", actor="rita")
    assert refused.value.code == "E_REVIEWED" and counts(engine) == before
    repo.import_documents(engine, PROJECT, [note(5)])
    repo.set_status(engine, _doc(engine, "n5"), "skipped", actor="rita")
    result = export_project(engine, PROJECT, tmp_path / "out", secret=b"s" * 32, actor="ada")
    scope = result.manifest["scope"]
    assert result.manifest["documents"] == 2
    assert scope["left_out"] == {"unreviewed": 1, "skipped_by_reviewer": 1}


# ------------------------------------------------------------------ zips

def test_zip_bomb_ratio_is_refused(engine, db_url, tmp_path, capsys, caplog) -> None:  # type: ignore[no-untyped-def]
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("ok.txt", f"Pt {SECRET}.")
        zf.writestr("big.txt", "A" * 2_000_000)  # compresses about 1000:1
    before = counts(engine)
    rc, _out, err = cli(["import", "--project", PROJECT, "--format", "txt", "--quiet", str(bomb),
                         "--db", db_url], capsys, caplog)
    assert rc == 1 and "[E_ZIP_RATIO]" in err and "big.txt" in err
    assert counts(engine)["documents"] == before["documents"]


def test_zip_total_limit(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from deid_core.errors import CorpusFormatError
    from deid_core.formats import txt

    z = tmp_path / "many.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for i in range(5):
            zf.writestr(f"n{i}.txt", f"note {i} " * 20)
    monkeypatch.setenv("DEID_MAX_ZIP_BYTES", "300")
    with pytest.raises(CorpusFormatError) as refused:
        list(txt.iter_txt(z))
    assert refused.value.code == "E_ZIP_TOTAL"


# ------------------------------------------------------------------ scheme-less models, Dask resume

@pytest.fixture(scope="module")
def custom_model(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    """A tiny model whose labels (CUSTOMER, DATE) are not all in a surrogate kinds table."""
    from deid_core.engine.model import TrainConfig, train_model

    docs = [Document(f"t{i}", f"Customer Ann{i} Moss came on 2020-01-{i % 28 + 1:02d}.",
                     (Span(9, 17 + len(str(i)), "CUSTOMER"),
                      Span(26 + len(str(i)), 36 + len(str(i)), "DATE")))
            for i in range(12)]
    model = train_model(docs, lang="en", config=TrainConfig(max_iterations=5))
    return model.save(tmp_path_factory.mktemp("custom") / "m")


def test_surrogates_for_labels_without_a_kind_are_refused(custom_model, tmp_path, capsys, caplog) -> None:  # type: ignore[no-untyped-def]
    data = write(tmp_path / "in.jsonl", jsonl_line(id="a", text=f"Customer {SECRET} came."))
    out = tmp_path / "out.jsonl"
    argv = ["deidentify", "--model", str(custom_model), "--input", str(data), "--output", str(out),
            "--mode", "surrogate", "--secret-file", str(write(tmp_path / "s", "ab" * 32))]
    rc, _out, err = cli(argv, capsys, caplog)
    assert rc == 1 and "[E_NO_SURROGATE_KIND]" in err and "CUSTOMER" in err and "DATE" not in err
    assert not out.exists()
    rc, _out, err = cli([*argv, "--unknown-labels", "tag"], capsys, caplog)
    assert rc == 0, err


def test_dask_resume_refuses_other_settings(tmp_path, capsys, caplog) -> None:  # type: ignore[no-untyped-def]
    """A killed surrogate run, then a redact rerun into the same folder: refused unless --restart."""
    from deid_core.protect.batch import (
        BatchSettings,
        check_resume,
        plan_partitions,
        process_partition,
    )

    model = str(Path(__file__).parent / "fixtures" / "model_v1_en")
    data = write(tmp_path / "in.jsonl", "".join(
        jsonl_line(id=f"d{i}", text=f"Seen by Dr {SECRET} on 2020-01-0{i + 1}.") for i in range(4)))
    out = tmp_path / "out"
    surrogate = BatchSettings(model_dir=model, output_dir=str(out), mode="surrogate",
                              secret_hex="ab" * 32)
    specs = plan_partitions([str(data)], partition_size=2)
    process_partition(specs[0], surrogate)  # the first partition finished, then the job was killed
    assert check_resume(surrogate) == 0  # same settings: resumes
    assert process_partition(specs[0], surrogate)["skipped"] is True
    argv = ["deidentify", "--engine", "dask", "--model", model, "--input", str(data), "--output",
            str(out), "--mode", "redact", "--secret-file", str(write(tmp_path / "s", "ab" * 32)),
            "--partition-size", "2"]
    rc, _out, err = cli(argv, capsys, caplog)
    assert rc == 1 and "[E_RESUME_MISMATCH]" in err
    assert (out / "_stats" / f"part-{specs[0].part_id}.json").is_file()  # nothing removed
    from dataclasses import replace

    redact = replace(surrogate, mode="redact")
    other_secret = replace(surrogate, secret_hex="cd" * 32)
    for changed in (redact, other_secret, replace(surrogate, bias=-1.0)):
        with pytest.raises(DeidError) as refused:
            check_resume(changed)
        assert refused.value.code == "E_RESUME_MISMATCH"
    assert check_resume(replace(redact, restart=True)) == 1
    assert not list((out / "_stats").glob("part-*.json")) and not list(out.glob("part-*"))
    assert process_partition(specs[0], redact)["skipped"] is False


# ------------------------------------------------------------------ debris of killed runs

def test_cleanup_removes_debris_of_dead_processes_only(tmp_path, capsys, caplog, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    from deid_core.store.owner import owner_tag

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(dead.stdout)
    host = owner_tag().rsplit("-", 1)[0]
    exports = tmp_path / "data" / "exports"
    exports.mkdir(parents=True)
    temp = tmp_path / "tmp"
    temp.mkdir()
    killed = exports / f".p-20261124.staging-{host}-{dead_pid}-abc123"
    (killed / "brat").mkdir(parents=True)
    for i in range(30):
        (killed / "brat" / f"n{i}.txt").write_text(f"Pt {SECRET}")
    running = exports / f".q.staging-{owner_tag()}-def456"  # this process: alive
    running.mkdir()
    old_style = exports / ".r.staging-xyz"  # no pid: removed once old
    old_style.mkdir()
    os.utime(old_style, (1, 1))
    train = temp / f"deid-train-{host}-{dead_pid}-q1w2"
    train.mkdir()
    keep = exports / "p-20261124"  # a finished export is never touched
    keep.mkdir()
    monkeypatch.setenv("DEID_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr("tempfile.tempdir", str(temp))
    db = ["--db", f"sqlite:///{tmp_path / 'c.db'}"]
    rc, out, err = cli(["db", "cleanup", "--dry-run", *db], capsys, caplog)
    assert rc == 0 and str(killed) in out and killed.exists()
    rc, out, err = cli(["db", "cleanup", *db], capsys, caplog)
    assert rc == 0, err
    assert not killed.exists() and not old_style.exists() and not train.exists()
    assert running.exists() and keep.exists()
    assert "removed 3 folder(s), 30 file(s)" in out


# ------------------------------------------------------------------ markdown injection

HOSTILE = ["![p](http://127.0.0.1:9/pixel.png)", "[click](javascript:alert(1))",
           "<img src=x onerror=alert(1)>", "# Heading\n- list", ":red[big] $x^2$ **bold**"]


@pytest.mark.parametrize("value", HOSTILE)
def test_md_makes_user_strings_inert(value) -> None:  # type: ignore[no-untyped-def]
    from deid_core.ui.safe_text import md

    out = md(value)
    for syntax in ("![", "](", "<img", "\n", "**", ":red["):
        assert syntax not in out
    assert re.search(r"(?<!\\)[$*_\[\]()!#]", out) is None  # every markdown character escaped
    assert out.replace("\\", "").replace("&lt;", "<").replace("&gt;", ">") == " ".join(value.split())


def test_review_title_renders_a_hostile_id_as_text(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from app_support import PROJECT, app_as, seed_store, texts

    from deid_core.ui.safe_text import md

    url = f"sqlite:///{tmp_path / 'app.db'}"
    engine = seed_store(url, n_notes=2)
    monkeypatch.setenv("DEID_DATABASE_URL", url)
    evil_id = HOSTILE[0]
    repo.import_documents(engine, PROJECT, [Document(evil_id, "Seen today.", (), {
        "patient_id": HOSTILE[1], "logprob": -9999.0, "logprob_per_token": -99.0})],
        annotations="predictions")
    at = app_as("rita", page="queue")
    at.button(key="review_next").click().run()
    at.switch_page("pages/review.py").run()
    assert not at.exception
    assert texts(at.title) == [f"Note {md(evil_id)}"]
    rendered = " ".join(str(e.value) for e in [*at.title, *at.markdown, *at.caption])
    assert "![" not in rendered and "](http" not in rendered and "](javascript" not in rendered


def test_app_page_exception_shows_code_and_class_only(tmp_path, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    from app_support import app_as, seed_store, texts

    url = f"sqlite:///{tmp_path / 'app.db'}"
    seed_store(url)
    monkeypatch.setenv("DEID_DATABASE_URL", url)

    def boom(*_a, **_k):  # type: ignore[no-untyped-def]
        raise ValueError(f"could not parse {SECRET}")

    monkeypatch.setattr("deid_core.store.throttle.sign_in", boom)
    at = app_as(None)
    at.text_input(key="login_username").input("rita")
    at.text_input(key="login_password").input("whatever-1")
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        at.button[0].click().run()
    assert not at.exception
    shown = texts(at.error)
    assert any("E\\_INTERNAL" in e and "ValueError" in e for e in shown), shown
    assert_no_leak(*shown, caplog.text)


# ------------------------------------------------------------------ imports that do not block reviewers

def test_reviewers_save_while_an_import_runs_and_unfinished_notes_stay_hidden(engine) -> None:  # type: ignore[no-untyped-def]
    """Between two chunks of an import a reviewer saves a note (on SQLite this needs the
    import to hold no write lock between chunks), and the import's notes are invisible
    until it completes."""
    target = _doc(engine, "n2")
    seen: dict[str, object] = {}

    def notes_with_a_save_in_the_middle():  # type: ignore[no-untyped-def]
        for i in range(10, 14):
            if i == 12:  # the first chunk (10, 11) is committed on SQLite
                seen["count"] = repo.count_documents(engine, PROJECT)
                seen["queue"] = [r.external_id for r in repo.review_queue(engine, PROJECT)]
                seen["save"] = repo.save_review(engine, target, "rita", [Span(3, 18, "PATIENT")], 0)
            yield note(i)

    result = repo.import_documents(engine, PROJECT, notes_with_a_save_in_the_middle(),
                                   actor="ada", chunk_size=2)
    assert seen["save"].ok  # type: ignore[union-attr]
    # Mid-import: the first chunk's notes n10, n11 are stored but not listed or counted.
    assert seen["count"] == 3 and seen["queue"] == ["n2"]
    assert result.n_imported == 4 and repo.count_documents(engine, PROJECT) == 7


def test_a_failing_import_leaves_nothing_visible_or_stored(engine) -> None:  # type: ignore[no-untyped-def]
    before = counts(engine)

    def notes_then_a_fault():  # type: ignore[no-untyped-def]
        yield from (note(i) for i in range(20, 25))
        raise DeidError("the reader failed half way")

    with pytest.raises(DeidError):
        repo.import_documents(engine, PROJECT, notes_then_a_fault(), actor="ada", chunk_size=2)
    after = counts(engine)
    assert {k: v for k, v in after.items() if k != "audit_events"} == \
        {k: v for k, v in before.items() if k != "audit_events"}


def test_cleanup_discards_the_hidden_batch_of_a_killed_import(engine, db_url, tmp_path, capsys, caplog, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    from sqlalchemy import update

    from deid_core.store.engine import write_session
    from deid_core.store.models import ImportBatch
    from deid_core.store.owner import host

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    before = counts(engine)
    result = repo.import_documents(engine, PROJECT, [note(30), note(31)], actor="ada")
    with write_session(engine) as s:  # as if the process died before marking it complete
        s.execute(update(ImportBatch).where(ImportBatch.id == result.batch_id)
                  .values(status="importing", owner=f"{host()}-{int(dead.stdout)}"))
    assert repo.count_documents(engine, PROJECT) == 3
    assert [b for b, _o, _c in repo.unfinished_import_batches(engine)] == [result.batch_id]
    monkeypatch.setenv("DEID_DATA_DIR", str(tmp_path))
    rc, out, err = cli(["db", "cleanup", "--db", db_url], capsys, caplog)
    assert rc == 0 and "discarded 1 unfinished import batch" in out, err
    after = counts(engine)
    skip = ("audit_events", "store_settings")
    assert {k: v for k, v in after.items() if k not in skip} == \
        {k: v for k, v in before.items() if k not in skip}
