"""Export a reviewed corpus as de-identified files, with a manifest and a leak check.

The export is all or nothing: documents are de-identified and leak-checked in
memory, every file is written into a staging folder beside the target, and the
folder is renamed into place only when all files and the manifest exist. A
failed export leaves no half-written corpus behind, and an existing export is
never overwritten.

Scope: only reviewed documents by default. Documents that were never
reviewed carry model predictions only; including them needs both
``include_unreviewed`` and an explicit ``confirm_unreviewed`` and is recorded
in the manifest.

Formats (any combination):

==============  ==============================================================
``txt``         ``texts/<id>.txt``, the de-identified notes
``txt-zip``     ``texts.zip`` with the same files
``jsonl``       ``corpus.jsonl`` in the shared format, spans over the new text;
                ``offset_maps.jsonl`` links each document to the original
                offsets (it reveals the original span lengths: share it only
                with those who hold the originals)
``brat``        ``brat/<id>.txt`` + ``.ann``
``i2b2``        ``i2b2/<id>.xml`` (i2b2 2014 XML)
``conll``       ``corpus.conll`` (BIO)
``docbin``      ``corpus.spacy`` (spaCy ``DocBin``)
``spans-csv``   ``spans.csv`` with provenance (source, author, model version)
==============  ==============================================================

Every export also writes ``leak_report.json`` and ``manifest.json`` (counts
per label and operator, model versions, bias, reviewers, date, operators,
secret fingerprint, and a sha256 of every other file).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal

from deid_core.corpus import atomic_write_text, document_from_dict, document_to_dict, write_jsonl
from deid_core.engine.propagate import SOURCE as PROPAGATED
from deid_core.errors import (
    CorpusFormatError,
    ExportRefused,
    LeakDetected,
    MappingConflict,
    PermissionDenied,
    UnsupportedFormat,
)
from deid_core.formats import safe_file_stem, write_i2b2_xml
from deid_core.formats.brat import format_ann
from deid_core.formats.conll import write_conll
from deid_core.formats.docbin import write_docbin
from deid_core.formats.spans_csv import write_spans_csv
from deid_core.protect.cleanup import staging_prefix
from deid_core.protect.leakcheck import SCOPES, KnownPhi, LeakChecker, LeakReport
from deid_core.protect.operators import (
    DeidentifiedDocument,
    OperatorConfig,
    deidentify_document,
    pseudonymise_meta,
)
from deid_core.protect.scope import add_values, mask_in_scope, patient_of, replaced_values
from deid_core.protect.surrogate_map import (
    MappingEntry,
    SurrogateMapping,
    mapping_key,
    secret_fingerprint,
)
from deid_core.spans import Document, sort_spans
from deid_core.store.authz import SYSTEM, Actor, actor_name, require

FORMATS = ("txt", "txt-zip", "jsonl", "brat", "i2b2", "conll", "docbin", "spans-csv")
MANIFEST_VERSION = 1
Progress = Callable[[str, float], None]


@dataclass(frozen=True)
class ExportItem:
    """One document to export: its original text with the spans to replace."""

    doc: Document
    reviewed: bool = True
    patient_key: str | None = None
    reviewers: tuple[str, ...] = ()
    model_version: str | None = None
    bias: float | None = None


@dataclass(frozen=True)
class ExportConfig:
    operators: OperatorConfig = field(default_factory=OperatorConfig)
    formats: tuple[str, ...] = ("jsonl",)
    include_unreviewed: bool = False
    #: Where PHI strings are searched, masked and leak-checked: each note for its
    #: own strings (``document``), every note of the same patient (``patient``), or
    #: of the whole export (``corpus``, the default: the widest the export covers).
    leak_scope: Literal["document", "patient", "corpus"] = "corpus"
    #: Mask the other occurrences of the export's PHI strings of identifying kinds
    #: (and their variants) within ``leak_scope``, with source ``propagated``.
    propagate: bool = True
    #: Write document ids, patient keys and source paths as they are (an admin's
    #: opt-in, recorded in the manifest) instead of HMAC pseudonyms.
    keep_ids: bool = False
    allow_leaks: bool = False  # write anyway when the leak check fails (recorded)

    def __post_init__(self) -> None:
        bad = [f for f in self.formats if f not in FORMATS]
        if bad or not self.formats:
            raise UnsupportedFormat(
                f"unknown export format(s) {', '.join(bad) or '(none)'}: use {', '.join(FORMATS)}"
            )
        object.__setattr__(self, "formats", tuple(dict.fromkeys(self.formats)))
        if self.leak_scope not in SCOPES:
            raise UnsupportedFormat(f"unknown leak scope {self.leak_scope!r}: use {', '.join(SCOPES)}")


@dataclass
class ExportResult:
    path: Path
    manifest: dict[str, Any]
    leak_report: LeakReport
    #: The de-identified documents, only when asked for (``keep_documents``): an
    #: export streams its documents so that memory does not grow with the corpus.
    documents: list[DeidentifiedDocument]
    #: Original document id -> the id written (a pseudonym unless ids are kept).
    ids: dict[str, str] = field(default_factory=dict)
    #: ``propagated`` spans added at export, as (original document id, start, end, label).
    propagated: list[tuple[str, int, int, str]] = field(default_factory=list)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:  # pragma: no cover - installed in every supported setup
        return None


class _Chosen:
    """The documents an export contains, read again on each pass (no copy is made)."""

    def __init__(self, items: Iterable[ExportItem], include_unreviewed: bool, count: int) -> None:
        self.items, self.include, self.count = items, include_unreviewed, count

    def __iter__(self) -> Iterator[ExportItem]:
        return (i for i in self.items if i.reviewed or self.include)

    def __len__(self) -> int:
        return self.count


def select_scope(
    items: Iterable[ExportItem], *, include_unreviewed: bool, confirm_unreviewed: bool
) -> tuple[_Chosen, dict[str, Any]]:
    """The documents an export may contain, and the scope record for the manifest.

    ``items`` may be any re-iterable collection (a list, or a reader that streams
    from a file): it is read once here and again by each pass of the export.
    """
    reviewed = unreviewed = 0
    for i in items:
        if i.reviewed:
            reviewed += 1
        else:
            unreviewed += 1
    if include_unreviewed and unreviewed and not confirm_unreviewed:
        raise ExportRefused(
            f"{unreviewed} unreviewed document(s) carry model predictions only;"
            " confirm explicitly to include them"
        )
    chosen = _Chosen(items, include_unreviewed, reviewed + (unreviewed if include_unreviewed else 0))
    scope = {
        "reviewed_only": not include_unreviewed,
        "include_unreviewed": include_unreviewed,
        "unreviewed_confirmed": bool(include_unreviewed and confirm_unreviewed),
        "reviewed_documents": reviewed,
        "unreviewed_documents": unreviewed if include_unreviewed else 0,
        "skipped_unreviewed": 0 if include_unreviewed else unreviewed,
    }
    return chosen, scope


def _check_target(out_dir: Path) -> None:
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise ExportRefused(f"{out_dir}: exists and is not an empty folder; choose a new one")


def check_brat_labels(doc: Document) -> None:
    """BRAT cannot store a label with whitespace (``write_brat`` checks the same)."""
    for s in doc.spans:
        if any(c.isspace() for c in s.label):
            raise CorpusFormatError(f"label {s.label!r} contains whitespace, which BRAT cannot store", doc_id=doc.id)


def _write_bytes(path: Path, data: bytes) -> None:
    """Plain write: files go to a private staging folder that is renamed into place
    as a whole, so per-file atomic renames and fsyncs would only cost time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)


class _Spool:
    """The de-identified documents of an export, written once to a file in the staging
    folder and read back once per format, so memory does not grow with the corpus."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ids: list[str] = []
        self._fh: Any = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed in finish()

    def add(self, doc: Document, operators: Sequence[str], offset_map: dict[str, Any]) -> None:
        record = {"doc": document_to_dict(doc), "ops": list(operators), "map": offset_map}
        self._fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.ids.append(doc.id)

    def finish(self) -> None:
        self._fh.close()

    def _records(self) -> Iterator[dict[str, Any]]:
        with open(self.path, encoding="utf-8") as fh:
            for line in fh:
                yield json.loads(line)

    def docs(self) -> Iterator[Document]:
        for r in self._records():
            yield document_from_dict(r["doc"], allow_overlap=True, check_text=False)

    def maps(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for r in self._records():
            yield r["doc"]["id"], r["map"]

    def operators(self) -> dict[str, list[str]]:
        return {r["doc"]["id"]: r["ops"] for r in self._records()}


def _write_files(stage: Path, formats: Sequence[str], spool: _Spool, lang: str) -> dict[str, Any]:
    stats: dict[str, Any] = {}
    stems = [safe_file_stem(i) for i in spool.ids]
    if len(set(stems)) != len(stems):
        counts = Counter(stems)
        dup = next(s for s in stems if counts[s] > 1)
        raise CorpusFormatError(f"two document ids map to the file name {dup!r}")
    if "txt" in formats:
        for doc, stem in zip(spool.docs(), stems):
            _write_bytes(stage / "texts" / f"{stem}.txt", doc.text.encode("utf-8"))
    if "txt-zip" in formats:
        with zipfile.ZipFile(stage / "texts.zip", "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for doc, stem in zip(spool.docs(), stems):
                info = zipfile.ZipInfo(f"{stem}.txt", date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, doc.text.encode("utf-8"))
    if "jsonl" in formats:
        write_jsonl(stage / "corpus.jsonl", spool.docs())

        def write_maps(fh: Any) -> None:
            for doc_id, omap in spool.maps():
                fh.write(json.dumps({"id": doc_id, "offset_map": omap}) + "\n")

        atomic_write_text(stage / "offset_maps.jsonl", write_maps)
    if "brat" in formats:
        for doc, stem in zip(spool.docs(), stems):
            check_brat_labels(doc)
            _write_bytes(stage / "brat" / f"{stem}.txt", doc.text.encode("utf-8"))
            _write_bytes(stage / "brat" / f"{stem}.ann", format_ann(doc).encode("utf-8"))
    if "i2b2" in formats:
        for doc, stem in zip(spool.docs(), stems):
            _write_bytes(stage / "i2b2" / f"{stem}.xml", write_i2b2_xml(doc).encode("utf-8"))
    if "conll" in formats:
        stats["conll"] = vars(write_conll(stage / "corpus.conll", spool.docs(), lang=lang))
    if "docbin" in formats:
        stats["docbin"] = vars(write_docbin(stage / "corpus.spacy", spool.docs(), lang=lang))
    if "spans-csv" in formats:
        stats["spans_csv"] = {"rows": write_spans_csv(stage / "spans.csv", spool.docs(), spool.operators())}
    return stats


@dataclass
class _Tally:
    """What the manifest counts, gathered as documents stream past."""

    documents: int = 0
    patients: set[str] = field(default_factory=set)
    labels: Counter[str] = field(default_factory=Counter)
    operators: dict[str, Counter[str]] = field(default_factory=dict)
    statuses: Counter[str] = field(default_factory=Counter)
    propagated: Counter[str] = field(default_factory=Counter)
    model_versions: set[str] = field(default_factory=set)
    biases: set[float] = field(default_factory=set)
    reviewers: set[str] = field(default_factory=set)

    def add(self, item: ExportItem, result: DeidentifiedDocument) -> None:
        self.documents += 1
        if item.model_version:
            self.model_versions.add(item.model_version)
        if item.bias is not None:
            self.biases.add(item.bias)
        self.reviewers.update(item.reviewers)
        if result.patient_key is not None:
            self.patients.add(result.patient_key)
        for d in result.decisions:
            self.labels[d.original.label] += 1
            self.operators.setdefault(d.original.label, Counter())[d.operator] += 1
            self.statuses[d.status] += 1
            if d.original.source == PROPAGATED:
                self.propagated[d.original.label] += 1


def build_manifest(
    tally: _Tally,
    *,
    config: ExportConfig,
    secret: bytes,
    scope: dict[str, Any],
    leak: LeakReport,
    files: dict[str, dict[str, Any]],
    format_stats: dict[str, Any],
    collisions: int | None,
    project: str | None,
    actor: str | None,
    created_at: str,
    known_strings: int = 0,
    estimate: dict[str, Any] | None = None,
) -> dict[str, Any]:
    labels, operators, statuses = tally.labels, tally.operators, tally.statuses
    return {
        "manifest_version": MANIFEST_VERSION,
        "created_at": created_at,
        "project": project,
        "actor": actor,
        "tool": {
            "deid_workbench": _package_version("deid-workbench"),
            "faker": _package_version("faker"),
            "spacy": _package_version("spacy"),
        },
        "scope": scope,
        "documents": tally.documents,
        "patients": len(tally.patients),
        "spans": sum(labels.values()),
        "spans_per_label": dict(sorted(labels.items())),
        "operators_per_label": {k: dict(sorted(v.items())) for k, v in sorted(operators.items())},
        "span_status": dict(sorted(statuses.items())),
        "model_versions": sorted(tally.model_versions),
        "bias": sorted(tally.biases),
        "reviewers": sorted(tally.reviewers),
        "operators": config.operators.to_dict(),
        "secret_fingerprint": secret_fingerprint(secret),
        "surrogate_collisions": collisions,
        "formats": list(config.formats),
        "format_stats": format_stats,
        "leak_check": {k: v for k, v in leak.to_dict().items() if k != "hits"},
        "allow_leaks": config.allow_leaks,
        "missed_phi_estimate": estimate,
        "propagation": {
            "enabled": config.propagate,
            "scope": config.leak_scope,
            "known_strings": known_strings,
            "spans_per_label": dict(sorted(tally.propagated.items())),
        },
        "ids": (
            {"pseudonymised": False, "kept_by": actor}
            if config.keep_ids
            else {"pseudonymised": True, "method": "HMAC-SHA256 under the project secret",
                  "fields": ["id", "meta.original_id", "meta.patient_key", "meta.source"]}
        ),
        "files": files,
    }


def export_corpus(
    items: Iterable[ExportItem],
    out_dir: str | os.PathLike[str],
    *,
    config: ExportConfig,
    secret: bytes,
    mapping: SurrogateMapping | None = None,
    confirm_unreviewed: bool = False,
    project: str | None = None,
    actor: str | None = None,
    progress: Progress | None = None,
    audit: Callable[[dict[str, Any]], None] | None = None,
    unreviewed_not_loaded: int = 0,
    skipped_by_reviewer: int = 0,
    keep_documents: bool = False,
    estimate: dict[str, Any] | None = None,
) -> ExportResult:
    """De-identify, leak-check and write ``items`` to the new folder ``out_dir``.

    Two passes stream the documents. The first gathers the PHI strings of
    identifying kinds that will be replaced (``KnownPhi``: memory grows with
    that set of strings, not with the corpus). The second, per document, masks
    their other occurrences within ``config.leak_scope`` (``config.propagate``;
    spans with source ``propagated``, the same surrogate as the original within
    the consistency scope), de-identifies, leak-checks and appends the result to
    a spool file in the staging folder; the formats are written from the spool.

    Raises ``ExportRefused`` (scope not confirmed, target not empty) before any
    work, and ``LeakDetected`` (after writing only ``leak_report.json`` beside
    the target, never the corpus) when the leak check fails and
    ``config.allow_leaks`` is false. ``audit``, if given, receives the
    manifest summary once the export is in place (the store records it as an
    audit event). ``unreviewed_not_loaded`` counts unreviewed documents the
    caller left out without loading them (recorded as skipped). ``mapping``
    receives the surrogates used (not values kept as written); one with a
    ``staged`` context (``DbSurrogateMapping``) writes them in a transaction
    that commits only once the folder is in place, so a failed export
    leaves no rows, and a ``MappingConflict`` stops it before the rename.
    ``keep_documents`` keeps the de-identified documents on the result (tests,
    small exports). ``estimate`` (the missed-PHI estimate, ``protect/estimate.py``)
    goes into the manifest.
    """
    target = Path(out_dir)
    _check_target(target)
    chosen, scope = select_scope(
        items, include_unreviewed=config.include_unreviewed, confirm_unreviewed=confirm_unreviewed
    )
    scope["skipped_unreviewed"] += unreviewed_not_loaded
    # Every note left out, with the reason, so the manifest accounts for the whole project.
    scope["skipped_by_reviewer"] = skipped_by_reviewer
    scope["left_out"] = {"unreviewed": scope["skipped_unreviewed"],
                         "skipped_by_reviewer": skipped_by_reviewer}
    report = progress or (lambda _m, _f: None)
    ops = config.operators
    gen = ops.generator(secret)
    leak_scope = config.leak_scope
    n = max(1, len(chosen))

    # Pass 1: the identifying PHI strings of the export (those that will be replaced).
    known = KnownPhi(ops.lang)
    if leak_scope != "document":
        for k, item in enumerate(chosen):
            doc = item.doc
            add_values(known, doc.id, replaced_values(doc.text, doc.spans, doc.meta, doc.id, ops), _patient_of(item))
            if k % 200 == 0:
                report("gathering PHI strings", 0.1 * k / n)
    checker = LeakChecker(lang=ops.lang, scope=leak_scope, known=known if leak_scope != "document" else None)

    target.parent.mkdir(parents=True, exist_ok=True)
    # The host and pid in the name let cleanup remove it once this process is gone.
    stage = Path(tempfile.mkdtemp(prefix=staging_prefix(target.name), dir=target.parent))
    moved = False  # once renamed, a failure (the mapping's commit) removes the new folder
    try:
        spool = _Spool(stage / ".documents.spool")
        tally = _Tally()
        entries: dict[str, MappingEntry] = {}
        kept: list[DeidentifiedDocument] = []
        ids: dict[str, str] = {}
        propagated: list[tuple[str, int, int, str]] = []
        review_ids: dict[str, Any] = {}  # leaking documents' ids in the store, for links to Review
        for k, item in enumerate(chosen):
            doc = item.doc
            spans = list(doc.spans)
            if config.propagate:
                added = mask_in_scope(doc, spans, known, _patient_of(item), leak_scope, ops)
                propagated.extend((doc.id, sp.start, sp.end, sp.label) for sp in added)
                spans = sort_spans([*spans, *added])
            patient = _patient_of(item)
            avoid = (lambda value, p=patient: known.is_original_of(value, p)) if leak_scope != "document" else None
            result = deidentify_document(
                doc, spans, config=ops, secret=secret, patient_key=item.patient_key, generator=gen, avoid=avoid,
            )
            out_doc = result.to_document()
            extra: dict[str, Any] = {"reviewed": item.reviewed}
            if item.model_version:
                extra["model_version"] = item.model_version
            out_doc = out_doc.with_meta(**extra)
            if not config.keep_ids:
                new_id, meta = pseudonymise_meta(out_doc.meta, secret, doc.id)
                out_doc = Document(new_id, out_doc.text, out_doc.spans, meta)
            if checker.check(doc, result, meta=out_doc.meta) and "db_id" in doc.meta:
                review_ids[doc.id] = doc.meta["db_id"]
            ids[doc.id] = out_doc.id
            spool.add(out_doc, [d.operator for d in result.decisions], result.offset_map.to_dict())
            tally.add(item, result)
            for e in recordable_entries([result], secret):
                entries.setdefault(e.key, e)
            if keep_documents:
                kept.append(result)
            if k % 25 == 0:
                report("de-identifying and checking for leaks", 0.1 + 0.6 * k / n)
        spool.finish()
        leak = checker.report
        leak.hits.sort(key=lambda h: (h.doc_id, h.field, h.start, h.end))
        if not leak.ok and not config.allow_leaks:
            leak_path = target.parent / f"{target.name}.leak_report.json"
            atomic_write_text(leak_path, lambda fh: json.dump(leak.to_dict(), fh, indent=1))
            exc = LeakDetected(
                f"{len(leak.leaks)} original PHI string(s) found in the output of"
                f" {len({h.doc_id for h in leak.leaks})} document(s); nothing exported."
                f" Hits (document, offset, label) are in {leak_path}"
            )
            exc.report, exc.review_ids = leak, review_ids
            raise exc
        entry_list = [entries[key] for key in sorted(entries)]
        staged = getattr(mapping, "staged", None)
        if mapping is not None and staged is None:
            mapping.record(entry_list)  # a conflict stops the export before the rename
        report("writing files", 0.8)
        format_stats = _write_files(stage, config.formats, spool, ops.lang)
        spool.path.unlink()
        # The report inside the export names documents by the ids written there.
        released = leak.to_dict(rename=ids)
        atomic_write_text(stage / "leak_report.json", lambda fh: json.dump(released, fh, indent=1))
        files = {
            p.relative_to(stage).as_posix(): {"sha256": _sha256(p), "bytes": p.stat().st_size}
            for p in sorted(stage.rglob("*"))
            if p.is_file()
        }
        with staged(entry_list) if staged is not None else nullcontext() as record:
            # A transactional mapping (the database's) stays uncommitted until the
            # folder is in place, so a failed export leaves no mapping rows behind.
            if record is not None:
                collisions: int | None = len(record.collisions)
            else:
                collisions = len(mapping.collisions()) if mapping is not None else None
            manifest = build_manifest(
                tally, config=config, secret=secret, scope=scope, leak=leak, files=files,
                format_stats=format_stats, collisions=collisions, project=project, actor=actor,
                created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                known_strings=known.n_strings, estimate=estimate,
            )
            atomic_write_text(stage / "manifest.json", lambda fh: json.dump(manifest, fh, indent=1, sort_keys=True))
            _check_target(target)
            if target.exists():
                target.rmdir()
            os.replace(stage, target)
            moved = True
    except BaseException:
        shutil.rmtree(target if moved else stage, ignore_errors=True)
        raise
    report("done", 1.0)
    if audit is not None:
        audit({k: manifest[k] for k in ("created_at", "documents", "spans", "formats", "scope", "leak_check", "secret_fingerprint")} | {"path": str(target)})
    return ExportResult(target, manifest, leak, kept, ids, propagated)


def _patient_of(item: ExportItem) -> str:
    return patient_of(item.patient_key, item.doc.id)


def recordable_entries(results: Sequence[DeidentifiedDocument], secret: bytes) -> list[MappingEntry]:
    """The mapping entries of an export, without those whose surrogate is the original itself.

    A value kept as written (an age up to 89) still yields an entry; recording
    it would put an original into the mapping. Its key is then the HMAC of the
    surrogate, which is how it is recognised without the original.
    """
    return [
        e for r in results for e in r.mapping_entries
        if e.key != mapping_key(secret, e.scope, e.kind, e.surrogate)
    ]


def verify_manifest(path: str | os.PathLike[str]) -> list[str]:
    """Files whose checksum no longer matches the manifest (empty when intact)."""
    root = Path(path)
    manifest = json.loads((root / "manifest.json").read_text("utf-8"))
    bad = []
    for rel, info in manifest["files"].items():
        p = root / rel
        if not p.is_file() or _sha256(p) != info["sha256"]:
            bad.append(rel)
    return bad


# ----------------------------------------------------------------- from the store


def items_from_store(engine: Any, project: str, *, include_unreviewed: bool = False) -> list[ExportItem]:
    """Reviewed documents (reviewed layer, reviewers, latest model version and bias) and,
    if asked, unreviewed ones with their latest prediction as the spans."""
    from deid_core.store.repository import get_document, reviewed_corpus, unreviewed_documents

    items = []
    for doc in reviewed_corpus(engine, project):
        layers = get_document(engine, int(doc.meta["db_id"]))
        reviewers = tuple(sorted({a.author for a in layers.annotations if a.author}))
        pred = layers.prediction
        items.append(ExportItem(
            doc, True, doc.meta.get("patient_id"), reviewers,
            pred.model_version if pred else None, pred.bias if pred else None,
        ))
    if include_unreviewed:
        for db_id, doc in unreviewed_documents(engine, project):
            pred = get_document(engine, db_id).prediction
            items.append(ExportItem(
                doc.with_spans(pred.spans if pred is not None else ()), False,
                doc.meta.get("patient_id"), (),
                pred.model_version if pred else None, pred.bias if pred else None,
            ))
    return items


def export_project(
    engine: Any,
    project: str,
    out_dir: str | os.PathLike[str],
    *,
    secret: bytes,
    config: ExportConfig | None = None,
    actor: Actor = SYSTEM,
    confirm_unreviewed: bool = False,
    mapping: SurrogateMapping | None = None,
    progress: Progress | None = None,
    keep_documents: bool = False,
) -> ExportResult:
    """Export a project from the store and record the export as an audit event.

    ``config.keep_ids`` (original ids, patient keys and source paths in the
    output) is for an active admin only: anyone else gets ``PermissionDenied``
    before any work (audited as ``export_refused``).

    ``config`` defaults to the project's ``export_operators`` setting (or
    surrogates for every label) in its language and scheme, JSONL only. The
    surrogates used go to ``mapping``, by default the project's mapping in
    the database (``DbSurrogateMapping``), committed only once the export is
    in place. A refused export (leak found, scope not confirmed, a surrogate
    that contradicts the stored mapping) is recorded too, as
    ``export_refused`` with the reason, and re-raised.
    """
    from deid_core.protect.surrogate_map_db import DbSurrogateMapping
    from deid_core.store.audit import record_event
    from deid_core.store.engine import write_session
    from deid_core.store.repository import UNREVIEWED, count_documents, get_project

    info = get_project(engine, project)
    if mapping is None:
        mapping = DbSurrogateMapping(engine, info.id)
    if config is None:
        raw = dict(info.settings.get("export_operators") or {})
        raw.setdefault("lang", info.lang)
        raw.setdefault("scheme", info.scheme)
        config = ExportConfig(OperatorConfig.from_dict(raw))

    def audit(summary: dict[str, Any]) -> None:
        with write_session(engine) as s:
            record_event(s, actor, "export", "project", info.id, project_id=info.id, after=summary)

    try:
        # Admins only (keeping original ids included); a refusal is audited below.
        actor = require(engine, actor, "admin", "export a project")
        items = items_from_store(engine, project, include_unreviewed=config.include_unreviewed)
        skipped = 0 if config.include_unreviewed else count_documents(engine, project, UNREVIEWED)
        return export_corpus(
            items, out_dir, config=config, secret=secret, mapping=mapping,
            confirm_unreviewed=confirm_unreviewed, project=project, actor=actor,
            progress=progress, audit=audit, unreviewed_not_loaded=skipped,
            skipped_by_reviewer=count_documents(engine, project, ("skipped",)),
            keep_documents=keep_documents, estimate=project_estimate(engine, project, info.settings),
        )
    except (LeakDetected, ExportRefused, MappingConflict, PermissionDenied) as exc:
        with write_session(engine) as s:
            record_event(
                s, actor_name(actor), "export_refused", "project", info.id, project_id=info.id,
                after={"reason": type(exc).__name__, "path": str(out_dir),
                       "formats": list(config.formats),
                       "include_unreviewed": config.include_unreviewed,
                       "keep_ids": config.keep_ids},
            )
        raise


def project_estimate(engine: Any, project: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The missed-PHI estimate for the manifest: from all reviewed notes, and from the
    audit sample alone, with the admin's target and the stopping rule's verdict."""
    from deid_core.protect.estimate import estimate_project

    target = settings.get("missed_phi_target")
    out: dict[str, Any] = {"target_per_1000_notes": target, "unit": "missed PHI characters per 1,000 notes"}
    for name, audit_only in (("reviewed", False), ("audit", True)):
        est = estimate_project(engine, project, audit_only=audit_only)
        out[name] = est.to_dict() if est.documents else None
        if est.documents and target is not None:
            out[name]["below_target"] = est.below(float(target))
    return out


def export_mapping_as(
    engine: Any, username: str, mapping: SurrogateMapping, path: str | os.PathLike[str]
) -> int:
    """Write a given (e.g. in-memory) mapping if ``username`` is an active admin (audited).

    A project's mapping in the database is exported with
    ``protect.surrogate_map_db.export_surrogate_mapping``, which also audits refusals.
    """
    from deid_core.protect.surrogate_map import export_mapping
    from deid_core.store.audit import record_event
    from deid_core.store.engine import write_session
    from deid_core.store.users import get_user

    user = get_user(engine, username)
    role = user.role if getattr(user, "active", True) else "inactive"
    n = export_mapping(mapping, path, role=role)
    with write_session(engine) as s:
        record_event(s, username, "export_mapping", "surrogate_mapping", None, after={"entries": n})
    return n

