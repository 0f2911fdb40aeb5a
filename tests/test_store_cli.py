"""The store's CLI commands, driven through ``deid_core.cli.main`` on each backend."""

from __future__ import annotations

import io

import pytest

from deid_core.cli import main
from deid_core.corpus import write_jsonl
from deid_core.spans import Document, Span
from deid_core.store import open_store, users
from deid_core.store import repository as repo
from deid_core.store.audit import list_events


def test_project_import_users(db_url, tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    db = ["--db", db_url]
    assert main(["project", "create", "p", "--lang", "en", "--scheme", "i2b2_2014", *db]) == 0
    assert main(["project", "create", "p", *db]) == 1
    assert "already exists" in capsys.readouterr().err

    corpus = tmp_path / "c.jsonl"
    docs = [Document(f"d{i}", f"Pt Alex Moss {i} here", (Span(3, 12, "PATIENT"),))
            for i in range(5)]
    write_jsonl(corpus, [*docs, Document("again", docs[0].text)])
    assert main(["import", "--project", "p", "--format", "jsonl", "--annotations", "gold",
                 "--quiet", str(corpus), *db]) == 0
    out = capsys.readouterr().out
    assert "imported 5 notes (5 spans as gold)" in out
    assert "skipped 1 duplicates" in out and "duplicate: again = d0" in out
    assert "Alex" not in out

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "text": "abc", "spans": [{"start": 1, "end": 9, "label": "P"}]}\n',
                   encoding="utf-8")
    assert main(["import", "--project", "p", "--format", "jsonl", "--quiet", str(bad), *db]) == 1
    err = capsys.readouterr().err
    assert "bad.jsonl, line 1" in err and "offset 1" in err

    monkeypatch.setattr("sys.stdin", io.StringIO("pass-word-1\n"))
    assert main(["users", "add", "rita", "--role", "reviewer", "--password-stdin", *db]) == 0
    assert main(["users", "deactivate", "rita", *db]) == 0
    assert main(["users", "list", *db]) == 0
    assert "rita\treviewer\tinactive" in capsys.readouterr().out

    engine = open_store(db_url)
    try:
        assert repo.count_documents(engine, "p") == 5
        assert users.get_user(engine, "rita").active is False
        # The command line acted as a local administrator, and the audit trail says so.
        events = list_events(engine, action="user.create")
        assert events and events[0].actor.startswith("local-admin:")
    finally:
        engine.dispose()


def test_users_add_without_terminal_needs_stdin_flag(db_url, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["users", "add", "sam", "--db", db_url]) == 1
    assert "--password-stdin" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["db", "upgrade"], ["db", "info"]])
def test_db_commands(db_url, capsys, argv) -> None:  # type: ignore[no-untyped-def]
    assert main([*argv, "--db", db_url]) == 0
    assert "revision" in capsys.readouterr().out
