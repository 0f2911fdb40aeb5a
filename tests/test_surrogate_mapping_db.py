"""The surrogate mapping in the database: migration 0002, DbSurrogateMapping, export wiring,
admin-only mapping export. Every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from alembic import command
from people import add_users
from sqlalchemy import inspect, select, text

from deid_core.cli import main
from deid_core.errors import ExportRefused, LeakDetected, MappingConflict, PermissionDenied
from deid_core.protect.export import ExportConfig, export_project, recordable_entries
from deid_core.protect.operators import OperatorConfig, deidentify_document
from deid_core.protect.surrogate_map import (
    InMemorySurrogateMapping,
    MappingEntry,
    mapping_key,
    normalise,
    scope_id,
)
from deid_core.protect.surrogate_map_db import DbSurrogateMapping, export_surrogate_mapping
from deid_core.spans import Document, Span
from deid_core.store.audit import list_events
from deid_core.store.engine import (
    alembic_config,
    create_store_engine,
    current_revision,
    upgrade_schema,
)
from deid_core.store.models import SurrogateMappingRow
from deid_core.store.repository import create_project, get_project, import_documents
from deid_core.store.users import create_user, set_active
from deid_core.synthetic import generate_notes

SECRET = b"0123456789abcdef-test-secret"
NOTES = generate_notes(9, seed=1)  # three patients, three notes each; names and MRNs recur


def _rows(engine) -> list[dict]:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(select(SurrogateMappingRow.__table__))]


def _project(engine, docs=NOTES, name: str = "p1") -> int:  # type: ignore[no-untyped-def]
    info = create_project(engine, name, lang="en", scheme="i2b2_2014")
    if docs:  # an empty import is refused (E_EMPTY)
        import_documents(engine, name, docs, annotations="gold")
    return info.id


def _config() -> ExportConfig:
    return ExportConfig(OperatorConfig(lang="en", scheme="i2b2_2014"), ("jsonl",))


def _entry(i: int, surrogate: str | None = None, scope: str = "corpus") -> MappingEntry:
    return MappingEntry(f"{i:064x}", scope, "name", "PATIENT", surrogate or f"Name{i}")


# ------------------------------------------------------------------ migration


def test_0002_applies_from_empty_and_on_top_of_0001(db_url: str) -> None:
    engine = create_store_engine(db_url)
    try:
        upgrade_schema(engine, "0001")
        assert current_revision(engine) == "0001"
        assert "surrogate_mappings" not in inspect(engine).get_table_names()
        with engine.begin() as conn:  # data written under 0001 survives the upgrade
            conn.execute(text(
                "INSERT INTO projects (name, lang, scheme, settings, created_at)"
                " VALUES ('old', 'en', 'i2b2_2014', '{}', CURRENT_TIMESTAMP)"
            ))
        upgrade_schema(engine, "0002")
        assert current_revision(engine) == "0002"
        insp = inspect(engine)
        cols = {c["name"] for c in insp.get_columns("surrogate_mappings")}
        assert cols == {"id", "project_id", "key", "scope", "kind", "label", "surrogate", "created_at"}
        uniques = {tuple(u["column_names"]) for u in insp.get_unique_constraints("surrogate_mappings")}
        assert ("project_id", "key") in uniques
        assert [fk["referred_table"] for fk in insp.get_foreign_keys("surrogate_mappings")] == ["projects"]
        assert get_project(engine, "old").name == "old"
        DbSurrogateMapping(engine, get_project(engine, "old").id).record([_entry(1)])
        with engine.begin() as conn:  # and it goes down again
            command.downgrade(alembic_config(conn), "0001")
        assert "surrogate_mappings" not in inspect(engine).get_table_names()
        assert get_project(engine, "old").name == "old"
    finally:
        engine.dispose()


# ------------------------------------------------------------------ the mapping itself


@pytest.mark.parametrize(
    "batches, rows, collisions",
    [
        ([[_entry(1), _entry(2)]], 2, 0),
        ([[_entry(1), _entry(1)], [_entry(1)]], 1, 0),  # idempotent within and across calls
        ([[_entry(1, "ANN  cole")], [_entry(1, "Ann Cole")]], 1, 0),  # case/space of the original
        ([[_entry(1, "Ann Cole"), _entry(2, "ann cole")]], 2, 1),  # two originals, one surrogate
        ([[_entry(1, "Ann Cole")], [_entry(2, "Ann Cole", scope="p:x")]], 2, 0),  # other scope
    ],
)
def test_record_get_entries_collisions(store, batches, rows, collisions) -> None:  # type: ignore[no-untyped-def]
    mapping = DbSurrogateMapping(store, _project(store, docs=[]))
    for batch in batches:
        mapping.record(batch)
    assert len(mapping) == rows == len(list(mapping.entries()))
    assert len(mapping.collisions()) == collisions
    first = batches[0][0]
    assert mapping.get(first.key) == first and mapping.get("f" * 64) is None


@pytest.mark.parametrize(
    "batch",
    [
        [_entry(3), _entry(1, "Someone Else")],  # differs from the stored surrogate
        [_entry(3), _entry(3, "Someone Else")],  # differs inside the batch
    ],
)
def test_conflict_names_key_prefix_and_label_and_adds_nothing(store, batch) -> None:  # type: ignore[no-untyped-def]
    mapping = DbSurrogateMapping(store, _project(store, docs=[]))
    mapping.record([_entry(1)])
    with pytest.raises(MappingConflict) as err:
        mapping.record(batch)
    message = str(err.value)
    assert batch[1].key[:12] in message and "PATIENT" in message
    assert "Someone" not in message and batch[1].key not in message
    assert [e.key for e in mapping.entries()] == [_entry(1).key]


def test_entries_are_paged_in_key_order(store, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("deid_core.protect.surrogate_map_db._PAGE", 7)
    mapping = DbSurrogateMapping(store, _project(store, docs=[]))
    other = DbSurrogateMapping(store, create_project(store, "other").id)
    entries = [_entry(i) for i in range(30, 0, -1)]
    mapping.record(entries)
    other.record(entries[:5])
    assert list(mapping.entries()) == sorted(entries, key=lambda e: e.key)
    assert len(other) == 5


def test_concurrent_record_of_overlapping_entries(store) -> None:  # type: ignore[no-untyped-def]
    mapping = DbSurrogateMapping(store, _project(store, docs=[]))
    entries = [_entry(i) for i in range(120)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def work(t: int) -> None:
        # Overlapping windows, in different orders per thread.
        mine = entries[t * 10 : t * 10 + 50]
        mine = mine[::-1] if t % 2 else mine
        barrier.wait()
        try:
            for i in range(0, len(mine), 20):
                mapping.record(mine[i : i + 20])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert len(mapping) == 120 and sorted(mapping.entries(), key=lambda e: e.key) == entries


def test_values_kept_as_written_are_not_recorded() -> None:
    text_ = "Ann Cole, 45, seen; Ann Cole is 92."
    doc = Document("d1", text_, (Span(0, 8, "PATIENT"), Span(10, 12, "AGE"), Span(32, 34, "AGE")))
    result = deidentify_document(doc, doc.spans, config=OperatorConfig(lang="en"), secret=SECRET,
                                 patient_key="P1")
    kept = mapping_key(SECRET, scope_id(SECRET, "P1"), "age", "45")
    assert kept in {e.key for e in result.mapping_entries}  # the generator reports it ...
    recorded = recordable_entries([result], SECRET)
    assert kept not in {e.key for e in recorded}  # ... the mapping does not hold it
    assert sorted(e.surrogate for e in recorded if e.kind == "age") == ["90+"]
    assert len(recorded) == 2


# ------------------------------------------------------------------ export wiring


def _identifying(docs: list[Document]) -> set[str]:
    """Originals no generator draws by chance: patient ids, multi-word values, 5+ digit ids.

    Single words, years, months and ages are left out: a Faker surrogate for some
    other value may contain one ("Martin-Gonzalez" for a company, "543 Laura Mall"
    for a street; a shifted date landing on another note's date), which says
    nothing about what it replaced (the leak check calls these coincidences).
    """
    values = {d.meta["patient_id"] for d in docs}
    for d in docs:
        for s in d.spans:
            v = d.text[s.start : s.end]
            if s.label in ("DATE", "AGE"):
                continue
            if len(v.split()) >= 2 or sum(c.isdigit() for c in v) >= 5:
                values.add(v)
    return values


# Columns that hold HMACs (hex): an original's digits may occur in them by chance ("…d253282a…").
HMAC_FIELDS = frozenset({"key", "scope"})


def _found_in(values: set[str], dump: str) -> list[str]:
    folded = normalise(dump)
    return sorted(v for v in values if normalise(v) in folded)


def test_export_records_mapping_without_originals(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pid = _project(store)
    add_users(store, admins=("ann",))
    result = export_project(store, "p1", tmp_path / "r1", secret=SECRET, config=_config(), actor="ann",
                            keep_documents=True)
    rows = _rows(store)
    assert rows and {r["project_id"] for r in rows} == {pid}
    assert len(rows) == len({e.key for e in recordable_entries(result.documents, SECRET)})
    # Every key is the HMAC of an original the export replaced, and its row does not hold it.
    texts = {d.id: d.text for d in NOTES}
    original_of = {
        mapping_key(SECRET, scope_id(SECRET, r.patient_key), dec.kind, texts[r.doc_id][dec.original.start : dec.original.end]):
            texts[r.doc_id][dec.original.start : dec.original.end]
        for r in result.documents for dec in r.decisions if dec.kind is not None
    }
    for row in rows:
        original = normalise(original_of[row["key"]])
        assert all(original not in normalise(str(v)) for k, v in row.items() if k != "created_at")
    # Keys and scopes are bare HMACs: no original, no patient id.
    assert all(len(r["key"]) == 64 and int(r["key"], 16) >= 0 for r in rows)
    assert {r["scope"][:2] for r in rows} == {"p:"} and all(len(r["scope"]) == 34 for r in rows)
    # No identifying original appears anywhere in the table.
    assert len(_identifying(NOTES)) > 20
    # (Keys and scopes are hex HMACs, checked above: any digit run may occur in them by chance.)
    dump = "\n".join("\t".join(str(v) for k, v in r.items() if k not in HMAC_FIELDS) for r in rows)
    assert _found_in(_identifying(NOTES), dump) == []
    assert result.manifest["surrogate_collisions"] == len(DbSurrogateMapping(store, pid).collisions())


def test_same_patient_value_same_surrogate_across_exports_no_duplicates(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # First export: one note per patient; second: every note (the store grew in between).
    create_project(store, "p1", lang="en", scheme="i2b2_2014")
    import_documents(store, "p1", NOTES[::3], annotations="gold")
    first = export_project(store, "p1", tmp_path / "r1", secret=SECRET, config=_config())
    n_first = len(_rows(store))
    import_documents(store, "p1", [d for i, d in enumerate(NOTES) if i % 3], annotations="gold")
    second = export_project(store, "p1", tmp_path / "r2", secret=SECRET, config=_config(), keep_documents=True)
    rows = _rows(store)
    keys = [r["key"] for r in rows]
    assert len(keys) == len(set(keys)) > n_first
    assert len(rows) == len({e.key for e in recordable_entries(second.documents, SECRET)})
    # Each (patient, normalised original) got one surrogate in both exports.
    seen: dict[tuple[str, str, str], set[str]] = {}
    for result in (first, second):
        for r in result.documents:
            doc = next(d for d in NOTES if d.id == r.doc_id)
            for dec in r.decisions:
                if dec.operator == "surrogate" and dec.status == "replaced" and dec.kind != "date":
                    original = normalise(doc.text[dec.original.start : dec.original.end])
                    new = normalise(r.text[dec.new.start : dec.new.end])
                    seen.setdefault((r.patient_key, dec.kind, original), set()).add(new)
    assert seen and all(len(v) == 1 for v in seen.values())
    # A name of the first export's notes recurs in the second export's other notes.
    assert ("P0001", "name", "william martin") in seen
    # Exporting again adds nothing.
    export_project(store, "p1", tmp_path / "r3", secret=SECRET, config=_config())
    assert len(_rows(store)) == len(rows)


def test_changed_secret_is_a_conflict_and_the_export_is_refused(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _project(store)
    export_project(store, "p1", tmp_path / "r1", secret=SECRET, config=_config())
    before = _rows(store)
    other = b"another-secret-of-enough-bytes"
    # Keys are HMACs under the secret, so a new secret gives new keys, not a conflict ...
    # ... unless the stored keys are reused: simulate by planting a wrong surrogate for a key.
    with store.begin() as conn:
        conn.execute(SurrogateMappingRow.__table__.update().where(
            SurrogateMappingRow.__table__.c.id == before[0]["id"]).values(surrogate="Zzz Qqq"))
    with pytest.raises(MappingConflict):
        export_project(store, "p1", tmp_path / "r2", secret=SECRET, config=_config())
    assert not (tmp_path / "r2").exists() and not list(tmp_path.glob(".r2.staging-*"))
    assert len(_rows(store)) == len(before)
    refused = list_events(store, action="export_refused")
    assert [e.after["reason"] for e in refused] == ["MappingConflict"]
    export_project(store, "p1", tmp_path / "r3", secret=other, config=_config())
    assert len(_rows(store)) > len(before)


@pytest.mark.parametrize("failure", ["rename", "leak", "scope"])
def test_failed_export_leaves_no_mapping_rows(store, tmp_path: Path, monkeypatch, failure: str) -> None:  # type: ignore[no-untyped-def]
    _project(store)
    config = _config()
    if failure == "rename":
        def boom(*_a, **_k):  # type: ignore[no-untyped-def]
            raise OSError("disk full")

        monkeypatch.setattr("deid_core.protect.export.os.replace", boom)
        expected: type[BaseException] = OSError
    elif failure == "leak":
        monkeypatch.setattr("deid_core.protect.leakcheck.LeakReport.ok", property(lambda _self: False))
        expected = LeakDetected
    else:
        import_documents(store, "p1", generate_notes(2, seed=99), annotations="none")
        config = ExportConfig(config.operators, ("jsonl",), include_unreviewed=True)
        expected = ExportRefused
    with pytest.raises(expected):
        export_project(store, "p1", tmp_path / "out", secret=SECRET, config=config)
    assert _rows(store) == []
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ admin-only export of the mapping


def test_only_an_active_admin_exports_the_mapping(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pid = _project(store)
    export_project(store, "p1", tmp_path / "r1", secret=SECRET, config=_config())
    create_user(store, "rev", "a-long-password-1", role="reviewer")
    create_user(store, "boss", "a-long-password-2", role="admin")
    create_user(store, "gone", "a-long-password-3", role="admin")
    set_active(store, "gone", False)
    out = tmp_path / "map.jsonl"
    for who in ("rev", "gone", "nobody"):
        with pytest.raises(PermissionDenied):
            export_surrogate_mapping(store, "p1", who, out)
        assert not out.exists()
    refused = list_events(store, action="export_mapping_refused")
    assert sorted(e.actor for e in refused) == ["gone", "nobody", "rev"]
    assert {e.project_id for e in refused} == {pid}
    n = export_surrogate_mapping(store, "p1", "boss", out)
    lines = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert n == len(lines) == len(_rows(store)) > 0
    assert set(lines[0]) == {"key", "scope", "kind", "label", "surrogate"}
    (event,) = list_events(store, action="export_mapping")
    assert event.actor == "boss" and event.project_id == pid and event.after["entries"] == n
    dump = "\n".join("\t".join(str(v) for k, v in line.items() if k not in HMAC_FIELDS) for line in lines)
    assert all(len(line["key"]) == 64 and int(line["key"], 16) >= 0 for line in lines)
    assert _found_in(_identifying(NOTES), dump) == []


def test_cli_export_records_and_mapping_out_is_admin_only(db_url: str, tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from deid_core.store import open_store

    monkeypatch.setenv("DEID_DATA_DIR", str(tmp_path))
    engine = open_store(db_url)
    try:
        _project(engine)
        create_user(engine, "rev", "a-long-password-1", role="reviewer")
        create_user(engine, "boss", "a-long-password-2", role="admin")
        base = ["export", "--project", "p1", "--db", db_url]
        assert main(base + ["--output", str(tmp_path / "r1")]) == 0
        n_rows = len(_rows(engine))
        assert n_rows > 0
        m = tmp_path / "map.jsonl"
        # A reviewer is refused before any export work; an admin gets the mapping alone.
        assert main(base + ["--output", str(tmp_path / "r2"), "--mapping-out", str(m), "--actor", "rev"]) == 1
        assert "admin" in capsys.readouterr().err
        assert not m.exists() and not (tmp_path / "r2").exists()
        assert main(base + ["--mapping-out", str(m), "--actor", "boss"]) == 0
        assert len(m.read_text("utf-8").splitlines()) == n_rows
        assert main(base) == 2  # neither --output nor --mapping-out
        assert main(base + ["--output", str(tmp_path / "r3"), "--mapping-out", str(m), "--actor", "boss"]) == 0
        assert len(_rows(engine)) == n_rows  # the same surrogates again: nothing added
        assert [e.actor for e in list_events(engine, action="export_mapping")] == ["boss", "boss"]
        assert [e.actor for e in list_events(engine, action="export_mapping_refused")] == ["rev"]
    finally:
        engine.dispose()


def test_in_memory_mapping_still_works_with_export_project(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _project(store)
    mapping = InMemorySurrogateMapping()
    result = export_project(store, "p1", tmp_path / "r1", secret=SECRET, config=_config(), mapping=mapping,
                            keep_documents=True)
    assert len(mapping) == len({e.key for e in recordable_entries(result.documents, SECRET)}) > 0
    assert _rows(store) == []  # the caller chose where the mapping goes


def test_a_failed_mapping_commit_removes_the_renamed_export(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from contextlib import contextmanager

    _project(store)
    real = DbSurrogateMapping(store, get_project(store, "p1").id)

    class CommitFails(DbSurrogateMapping):
        @contextmanager
        def staged(self, entries):  # type: ignore[no-untyped-def,override]
            with real.staged(entries) as record:
                yield record
                assert (tmp_path / "out" / "manifest.json").exists()  # renamed into place ...
                raise OSError("connection lost at commit")  # ... then the commit fails

    with pytest.raises(OSError, match="commit"):
        export_project(store, "p1", tmp_path / "out", secret=SECRET, config=_config(),
                       mapping=CommitFails(store, real.project_id))
    assert not (tmp_path / "out").exists() and _rows(store) == []
