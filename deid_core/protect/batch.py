"""Batch de-identification of large archives on Dask.

The archive is cut into partitions (line ranges of JSONL files, row groups of
Parquet files, whole CSV files) and the single-process pipeline runs on each
with ``dask.bag.map_partitions``. Three properties make the job safe to run on
a real cluster:

- Each partition writes its outputs under a temporary name and renames them;
  a small stats file, written last, marks the partition done. A rerun skips
  done partitions, so a killed job resumes where it stopped.
- The model is loaded once per worker process (a process-level cache), not
  once per task.
- Surrogates are a pure function of (secret, patient key, value, label), so a
  patient's notes give the same output whichever partition they land in.
- Patient and corpus scope (``BatchSettings.scope``) take two passes: each
  partition first returns its seeds (the PHI strings the model tagged
  confidently, ``Deidentifier.seeds``), the client joins them in input order
  and broadcasts them, and each worker builds one ``KnownPhi`` from them
  before masking and leak-checking. The seeds travel in memory only (never to
  disk); the output's fingerprint carries their HMAC, so a resumed run with
  another input refuses to mix outputs.

CSV files are never split: a note's text may hold quoted newlines, and a byte
range cut of a CSV could land inside one. Use JSONL or Parquet for large single
files.
"""

from __future__ import annotations

import glob
import hashlib
import hmac
import json
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from deid_core.corpus import atomic_write_text, document_from_dict
from deid_core.engine.model import freeze_loaded_heap
from deid_core.errors import CorpusFormatError, DeidError, ResumeMismatch
from deid_core.protect.deidentify import Deidentifier, SpanReplay
from deid_core.protect.leakcheck import KnownPhi
from deid_core.protect.operators import patient_key_from_meta
from deid_core.spans import Document

INPUT_KINDS = {".jsonl": "jsonl", ".json": "jsonl", ".parquet": "parquet", ".csv": "csv"}
OUTPUT_FORMATS = ("jsonl", "parquet")
DEFAULT_PARTITION_SIZE = 2000


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    """One unit of work: a slice of one input file."""

    part_id: str
    path: str
    kind: str  # jsonl | parquet | csv
    start: int  # jsonl: byte offset; parquet: first row group; csv: 0
    stop: int  # jsonl: byte offset (exclusive); parquet: row group stop; csv: 0
    first_line: int = 1  # jsonl: line number of the first line in the slice


@dataclass(frozen=True, slots=True)
class BatchSettings:
    """Everything a worker needs to de-identify a partition; picklable and PHI-free."""

    model_dir: str
    output_dir: str
    mode: str  # surrogate | tag | redact
    secret_hex: str
    bias: float = 0.0
    patient_key: str | None = None  # "meta.patient_id" for JSONL, a column name for tables
    operator_settings: str | None = None  # JSON of per-label operator settings (YAML --operators)
    id_column: str = "id"
    text_column: str = "text"
    output_format: str = "jsonl"
    unknown_labels: str = "error"
    restart: bool = False  # discard partitions written with another fingerprint
    keep_ids: bool = False  # original ids, patient keys and sources instead of pseudonyms
    allow_leaks: bool = False  # write leaking notes anyway (the explicit override)
    propagate: bool = True  # mark other occurrences of confidently tagged PHI in each note
    #: Where seeded PHI strings are masked and leak-checked: document | patient | corpus.
    scope: str = "document"
    seed_min_score: float | None = None  # None: the model's propagate_min_score
    #: HMAC of the first pass's seeds (set by ``run_batch``; part of the fingerprint).
    known_digest: str | None = None

    def fingerprint(self) -> str:
        """What a partition's output depends on: model, mode, bias, operators, secret id, ids, leaks.

        The model is identified by its manifest (hashes of every file), the
        secret by its HMAC fingerprint, never by its bytes.
        """
        from deid_core.protect.surrogate_map import secret_fingerprint

        manifest = Path(self.model_dir) / "manifest.json"
        model_id = (hashlib.sha256(manifest.read_bytes()).hexdigest() if manifest.is_file()
                    else os.path.abspath(self.model_dir))
        parts = {
            "model": model_id, "mode": self.mode, "bias": self.bias,
            "operators": self.operator_settings, "unknown_labels": self.unknown_labels,
            "secret": secret_fingerprint(bytes.fromhex(self.secret_hex)),
            "patient_key": self.patient_key, "id_column": self.id_column,
            "text_column": self.text_column, "output_format": self.output_format,
            "keep_ids": self.keep_ids, "allow_leaks": self.allow_leaks, "propagate": self.propagate,
            "scope": self.scope, "seed_min_score": self.seed_min_score, "known": self.known_digest,
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()[:32]


@dataclass
class BatchSummary:
    partitions: int = 0
    partitions_skipped: int = 0
    documents: int = 0
    rejected: int = 0
    spans_per_label: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    documents_this_run: int = 0
    #: Spans masked because a string seeded in another note of the scope occurs there.
    masked_per_label: dict[str, int] = field(default_factory=dict)
    scope: str = "document"
    docs_per_second: float = 0.0
    model_loads: dict[str, int] = field(default_factory=dict)  # worker pid -> loads
    worker_peak_rss_mb: dict[str, float] = field(default_factory=dict)  # worker pid -> MiB
    #: Patient/corpus scope: notes whose spans the second pass took from the first
    #: pass instead of tagging them again (None: document scope, one pass).
    tagged_once: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- planning


def expand_inputs(patterns: Sequence[str]) -> list[str]:
    """Files named by paths or globs, sorted and de-duplicated; unknown endings are errors."""
    found: list[str] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not matches:
            raise CorpusFormatError("no input file matches this pattern", path=pattern)
        for m in matches:
            if os.path.isdir(m):
                matches_in_dir = sorted(
                    str(p) for p in Path(m).iterdir() if p.suffix.lower() in INPUT_KINDS
                )
                found.extend(matches_in_dir)
            else:
                found.append(m)
    out = sorted(dict.fromkeys(found))
    for path in out:
        if not os.path.isfile(path):
            raise CorpusFormatError("input file does not exist", path=path)
        if Path(path).suffix.lower() not in INPUT_KINDS:
            raise CorpusFormatError(
                "unsupported input format (use .jsonl, .parquet or .csv)", path=path
            )
    return out


def _part_prefix(path: str) -> str:
    digest = hashlib.sha1(os.path.abspath(path).encode("utf-8")).hexdigest()[:8]
    stem = "".join(c if c.isalnum() or c in "-_" else "_" for c in Path(path).stem)[:40]
    return f"{stem}-{digest}"


def _plan_jsonl(path: str, size: int) -> list[PartitionSpec]:
    specs: list[PartitionSpec] = []
    prefix = _part_prefix(path)
    start, lines, first_line, offset, lineno = 0, 0, 1, 0, 0
    with open(path, "rb") as fh:
        for raw in fh:
            lineno += 1
            offset += len(raw)
            lines += 1
            if lines == size:
                specs.append(PartitionSpec(f"{prefix}-{len(specs):05d}", path, "jsonl", start, offset, first_line))
                start, lines, first_line = offset, 0, lineno + 1
    if lines:
        specs.append(PartitionSpec(f"{prefix}-{len(specs):05d}", path, "jsonl", start, offset, first_line))
    return specs


def _plan_parquet(path: str, size: int) -> list[PartitionSpec]:
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise CorpusFormatError(f"cannot read Parquet metadata ({type(exc).__name__})", path=path) from None
    prefix = _part_prefix(path)
    specs: list[PartitionSpec] = []
    group_start, rows = 0, 0
    for g in range(meta.num_row_groups):
        rows += meta.row_group(g).num_rows
        if rows >= size:
            specs.append(PartitionSpec(f"{prefix}-{len(specs):05d}", path, "parquet", group_start, g + 1))
            group_start, rows = g + 1, 0
    if group_start < meta.num_row_groups:
        specs.append(
            PartitionSpec(f"{prefix}-{len(specs):05d}", path, "parquet", group_start, meta.num_row_groups)
        )
    return specs


def plan_partitions(paths: Sequence[str], partition_size: int = DEFAULT_PARTITION_SIZE) -> list[PartitionSpec]:
    if partition_size < 1:
        raise ValueError("partition size must be at least 1")
    specs: list[PartitionSpec] = []
    for path in paths:
        kind = INPUT_KINDS[Path(path).suffix.lower()]
        if kind == "jsonl":
            specs.extend(_plan_jsonl(path, partition_size))
        elif kind == "parquet":
            specs.extend(_plan_parquet(path, partition_size))
        else:
            specs.append(PartitionSpec(f"{_part_prefix(path)}-00000", path, "csv", 0, 0))
    return specs


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True, slots=True)
class Reject:
    part_id: str
    path: str
    record: str  # the record's id when known, else "line N" / "row N"
    reason: str  # never note text
    #: For a leak: where the original PHI strings remain (start, end, field, label, match).
    hits: tuple[dict[str, Any], ...] = ()


def read_partition(spec: PartitionSpec, settings: BatchSettings) -> Iterator[tuple[Document, str | None] | Reject]:
    """Yield (document, patient key) pairs or rejects; a bad record never stops the partition."""
    if spec.kind == "jsonl":
        yield from _read_jsonl_slice(spec, settings)
    else:
        yield from _read_table(spec, settings)


def _read_jsonl_slice(spec: PartitionSpec, settings: BatchSettings) -> Iterator[tuple[Document, str | None] | Reject]:
    with open(spec.path, "rb") as fh:
        fh.seek(spec.start)
        data = fh.read(spec.stop - spec.start)
    for i, raw_line in enumerate(data.splitlines()):
        lineno = spec.first_line + i
        where = f"line {lineno}"
        if not raw_line.strip():
            continue
        try:
            line = raw_line.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield Reject(spec.part_id, spec.path, where, f"not valid UTF-8 (byte {exc.start})")
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            yield Reject(spec.part_id, spec.path, where, f"malformed JSON ({exc.msg})")
            continue
        record = str(raw.get("id", where)) if isinstance(raw, dict) else where
        try:
            # Input spans are not needed (the model detects PHI) but must not be trusted blindly.
            doc = document_from_dict(raw, path=spec.path, line=lineno, allow_overlap=True, check_text=False)
        except DeidError as exc:
            yield Reject(spec.part_id, spec.path, record, _reason(exc))
            continue
        yield doc.with_spans(()), patient_key_from_meta(doc, settings.patient_key)


def _reason(exc: Exception) -> str:
    # CorpusFormatError messages name file/line/offsets only, never text.
    return str(exc).split(": ", 1)[-1] if isinstance(exc, CorpusFormatError) else type(exc).__name__


def _patient_column(key: str | None, columns: list[str]) -> str | None:
    """For tables, ``meta.X`` (the JSONL-style default) means column X if there is one;
    any other key names a column that must exist."""
    if not key:
        return None
    if key.startswith("meta."):
        name = key[len("meta."):]
        return name if name in columns else None
    return key


def _read_table(spec: PartitionSpec, settings: BatchSettings) -> Iterator[tuple[Document, str | None] | Reject]:
    import pandas as pd
    import pyarrow.parquet as pq

    try:
        if spec.kind == "parquet":
            table = pq.ParquetFile(spec.path).read_row_groups(list(range(spec.start, spec.stop)))
            frame = table.to_pandas()
            row_base = 0
        else:
            frame = pd.read_csv(spec.path, dtype=str, keep_default_na=False, encoding="utf-8")
            row_base = 2  # header is line 1
    except (UnicodeDecodeError, ValueError, OSError) as exc:
        yield Reject(spec.part_id, spec.path, "file", f"cannot read file ({type(exc).__name__})")
        return
    missing = [c for c in (settings.id_column, settings.text_column) if c not in frame.columns]
    patient_column = _patient_column(settings.patient_key, list(frame.columns))
    if patient_column is not None and patient_column not in frame.columns:
        missing.append(patient_column)
    if missing:
        yield Reject(spec.part_id, spec.path, "file", f"missing column(s): {', '.join(missing)}")
        return
    ids = frame[settings.id_column].tolist()
    texts = frame[settings.text_column].tolist()
    patients = frame[patient_column].tolist() if patient_column else [None] * len(ids)
    for i, (doc_id, text, patient) in enumerate(zip(ids, texts, patients)):
        record = str(doc_id) if doc_id not in (None, "") else f"row {row_base + i}"
        if doc_id in (None, "") or not isinstance(text, str):
            yield Reject(spec.part_id, spec.path, record, "missing id or text")
            continue
        yield Document(str(doc_id), text, (), {}), None if patient in (None, "") else str(patient)


# --------------------------------------------------------------------------- processing

#: Per-process cache: each worker process loads the model once, whatever the number of tasks.
_PROCESSORS: dict[tuple[Any, ...], Deidentifier] = {}
_LOADS: Counter[str] = Counter()


def _processor_key(settings: BatchSettings) -> tuple[Any, ...]:
    return (
        settings.model_dir, settings.mode, settings.secret_hex, settings.bias, settings.operator_settings,
        settings.keep_ids, settings.allow_leaks, settings.propagate, settings.scope, settings.seed_min_score,
    )


def _processor(settings: BatchSettings) -> Deidentifier:
    key = _processor_key(settings)
    proc = _PROCESSORS.get(key)
    if proc is None:
        proc = Deidentifier.from_model_dir(
            settings.model_dir,
            mode=settings.mode,
            secret=bytes.fromhex(settings.secret_hex),
            bias=settings.bias,
            settings=json.loads(settings.operator_settings) if settings.operator_settings else None,
            unknown_labels=settings.unknown_labels,
            keep_ids=settings.keep_ids,
            allow_leaks=settings.allow_leaks,
            propagate=settings.propagate,
            scope=settings.scope,  # type: ignore[arg-type]  # checked by Deidentifier
            seed_min_score=settings.seed_min_score,
        )
        _PROCESSORS[key] = proc
        _LOADS[_load_key(key)] += 1
        freeze_loaded_heap()
    return proc


def _load_key(key: tuple[Any, ...]) -> str:
    return hashlib.sha1(repr(key).encode("utf-8")).hexdigest()[:12]


# --------------------------------------------------------------------------- patient and corpus scope

#: One note's seeds, as the first pass returns them: (doc id, patient key, label, string).
Seed = tuple[str, str | None, str, str]

#: Per-process cache of the scope's ``KnownPhi``, by seeds digest (only the latest is kept).
_KNOWN: dict[str, KnownPhi] = {}


def gather_partition(proc: Deidentifier, spec: PartitionSpec, settings: BatchSettings) -> list[Seed]:
    """The first pass over one partition: its seeds in input order, the first occurrence
    of each (patient, label, string) only (a repeat adds nothing to ``KnownPhi``), so
    what travels grows with the distinct strings, not with the notes.

    A bad record or a note that fails here is skipped: the second pass rejects it."""
    out: list[Seed] = []
    seen: set[tuple[str | None, str, str]] = set()
    for item in read_partition(spec, settings):
        if isinstance(item, Reject):
            continue
        doc, patient = item
        try:
            values = proc.seeds(doc)
        except Exception:  # noqa: BLE001 - the second pass reports it as a reject
            continue
        for label, value in values:
            if (patient, label, value) not in seen:
                seen.add((patient, label, value))
                out.append((doc.id, patient, label, value))
    return out


def join_seeds(parts: Sequence[Sequence[Seed]]) -> list[Seed]:
    """Partitions' seeds in partition order, first occurrences only."""
    out: list[Seed] = []
    seen: set[tuple[str | None, str, str]] = set()
    for part in parts:
        for doc_id, patient, label, value in part:
            if (patient, label, value) not in seen:
                seen.add((patient, label, value))
                out.append((doc_id, patient, label, value))
    return out


def known_from_seeds(proc: Deidentifier, seeds: Sequence[Seed]) -> KnownPhi:
    """The scope's ``KnownPhi``; the same seeds in the same order give the same index."""
    known = proc.new_known()
    for doc_id, patient, label, value in seeds:
        proc.add_seeds(known, doc_id, patient, [(label, value)])
    return known


def seeds_digest(secret: bytes, seeds: Sequence[Seed]) -> str:
    """An HMAC of the seeds (a plain hash of PHI strings could be checked against guesses)."""
    payload = json.dumps(list(seeds), ensure_ascii=False).encode("utf-8")
    return hmac.new(secret, b"deid-seeds\x00" + payload, hashlib.sha256).hexdigest()[:32]


def _gather_part_list(specs: list[PartitionSpec], settings: BatchSettings) -> list[list[Seed]]:
    """The first pass on a worker. Each partition's spans (ids, offsets, labels; no
    text) are kept in the output folder for whichever worker runs its second pass."""
    proc = _processor(settings)
    out = []
    for spec in specs:
        path = _paths(settings, spec.part_id)["spans"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)  # never replay an earlier run's spans
        tmp = path.with_name(f".{path.name}.tmp")
        proc.replay = SpanReplay(tmp)
        try:
            out.append(gather_partition(proc, spec, settings))
        finally:
            proc.replay.close()
            proc.replay = None
        tmp.replace(path)
    return out


def _known(settings: BatchSettings, seeds: Sequence[Seed] | None) -> KnownPhi | None:
    if settings.known_digest is None:
        return None
    known = _KNOWN.get(settings.known_digest)
    if known is None:
        if seeds is None:
            raise DeidError("the scope's seeds were not passed to the worker")
        _KNOWN.clear()
        known = _KNOWN[settings.known_digest] = known_from_seeds(_processor(settings), seeds)
    return known


def _paths(settings: BatchSettings, part_id: str) -> dict[str, Path]:
    out = Path(settings.output_dir)
    return {
        "data": out / f"part-{part_id}.{settings.output_format}",
        "rejects": out / "rejects" / f"part-{part_id}.jsonl",
        "stats": out / "_stats" / f"part-{part_id}.json",
        "masked": out / "masked" / f"part-{part_id}.jsonl",
        "spans": out / "_spans" / f"part-{part_id}.jsonl",  # the first pass's, until the second ends
    }


def partition_done(settings: BatchSettings, part_id: str) -> bool:
    return _paths(settings, part_id)["stats"].is_file()


def process_note(
    proc: Deidentifier,
    spec: PartitionSpec,
    doc: Document,
    patient: str | None,
    known: KnownPhi | None = None,
    masked: list[dict[str, Any]] | None = None,
) -> dict[str, Any] | Reject:
    """One note, as both ``deidentify`` paths handle it: its record, or a reject.

    A note whose output still holds original PHI is never written (unless the
    processor allows leaks); its reject names the offsets, never the text.
    ``masked`` receives the spans masked from the scope's seeds (original id,
    offsets in the original note, label).
    """
    try:
        outcome = proc.process(doc, patient_key=patient, known=known)
    except DeidError as exc:
        return Reject(spec.part_id, spec.path, doc.id, _reason(exc))
    except Exception as exc:  # a bad record never kills the job; the reason names the type only
        return Reject(spec.part_id, spec.path, doc.id, f"failed: {type(exc).__name__}")
    if outcome.record is None:
        return Reject(spec.part_id, spec.path, doc.id, outcome.reason or "rejected", outcome.hits)
    if masked is not None:
        masked.extend({"id": doc.id, "start": a, "end": b, "label": label} for a, b, label in outcome.masked)
    return outcome.record


def process_partition(
    spec: PartitionSpec, settings: BatchSettings, seeds: Sequence[Seed] | None = None
) -> dict[str, Any]:
    """De-identify one partition and write its outputs; returns its stats (no PHI).

    ``seeds``: the first pass's, when ``settings.scope`` is patient or corpus."""
    paths = _paths(settings, spec.part_id)
    fingerprint = settings.fingerprint()
    if paths["stats"].is_file():
        stats = json.loads(paths["stats"].read_text("utf-8"))
        if stats.get("fingerprint") == fingerprint:
            paths["spans"].unlink(missing_ok=True)
            stats["skipped"] = True
            return stats
        # run_batch refused or cleared mismatched partitions before starting; one that
        # appears now was written concurrently with other settings.
        raise ResumeMismatch(f"partition {spec.part_id} was written with other settings")
    started = time.perf_counter()
    proc = _processor(settings)
    known = _known(settings, seeds)
    records: list[dict[str, Any]] = []
    rejects: list[Reject] = []
    masked: list[dict[str, Any]] = []
    labels: Counter[str] = Counter()
    # This run's first pass wrote the partition's spans (only scoped runs have one).
    replay = SpanReplay.from_file(paths["spans"]) if known is not None and paths["spans"].is_file() else None
    proc.replay = replay
    try:
        for item in read_partition(spec, settings):
            if isinstance(item, Reject):
                rejects.append(item)
                continue
            doc, patient = item
            outcome = process_note(proc, spec, doc, patient, known, masked)
            if isinstance(outcome, Reject):
                rejects.append(outcome)
                continue
            labels.update(s["label"] for s in outcome["spans"])
            records.append(outcome)
    finally:
        proc.replay = None
        if replay is not None:
            replay.close()
    _write_records(paths["data"], records, settings.output_format)
    atomic_write_text(
        paths["rejects"],
        lambda fh: fh.writelines(json.dumps(asdict(r), ensure_ascii=False) + "\n" for r in rejects),
    )
    if known is not None:
        atomic_write_text(
            paths["masked"], lambda fh: fh.writelines(json.dumps(m, ensure_ascii=False) + "\n" for m in masked)
        )
    stats = {
        "part_id": spec.part_id,
        "documents": len(records),
        "rejected": len(rejects),
        "spans_per_label": dict(sorted(labels.items())),
        "masked_per_label": dict(sorted(Counter(m["label"] for m in masked).items())),
        "seconds": round(time.perf_counter() - started, 4),
        "pid": os.getpid(),
        "model_loads": _LOADS[_load_key(_processor_key(settings))],
        "worker_peak_rss_mb": _peak_rss_mb(),
        "skipped": False,
        "fingerprint": fingerprint,
        "tagged_once": replay.reused if replay is not None else None,
    }
    # Written last: its presence is what marks the partition done.
    atomic_write_text(paths["stats"], lambda fh: fh.write(json.dumps(stats, sort_keys=True)))
    paths["spans"].unlink(missing_ok=True)
    return stats


def check_resume(settings: BatchSettings) -> int:
    """Refuse to mix partitions written with other settings into this run's output.

    Each done partition's stats record the settings' fingerprint. A rerun
    with another model, mode, bias, operators or secret would otherwise
    reuse them and exit 0 with a mixed output. With ``settings.restart`` the
    stale partitions (data, rejects, stats) are removed instead. Returns the
    number of stale partitions found.
    """
    fingerprint = settings.fingerprint()
    stats_dir = Path(settings.output_dir) / "_stats"
    stale = []
    for path in sorted(stats_dir.glob("part-*.json")) if stats_dir.is_dir() else []:
        try:
            recorded = json.loads(path.read_text("utf-8")).get("fingerprint")
        except (OSError, ValueError):
            recorded = None
        if recorded != fingerprint:
            stale.append(path.name[len("part-"):-len(".json")])
    if stale and not settings.restart:
        raise ResumeMismatch(
            f"{settings.output_dir}: {len(stale)} partition(s) were written with other settings"
            " (model, mode, bias, operators or secret); use a new output folder, or --restart to"
            " discard them"
        )
    for part_id in stale:
        for fmt in OUTPUT_FORMATS:
            (Path(settings.output_dir) / f"part-{part_id}.{fmt}").unlink(missing_ok=True)
        (Path(settings.output_dir) / "rejects" / f"part-{part_id}.jsonl").unlink(missing_ok=True)
        (Path(settings.output_dir) / "masked" / f"part-{part_id}.jsonl").unlink(missing_ok=True)
        (stats_dir / f"part-{part_id}.json").unlink(missing_ok=True)  # last: it marks done
    return len(stale)


def _peak_rss_mb() -> float:
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # Linux: KiB


def _write_records(path: Path, records: list[dict[str, Any]], fmt: str) -> None:
    if fmt == "jsonl":
        atomic_write_text(
            path, lambda fh: fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        )
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "id": [r["id"] for r in records],
            "text": [r["text"] for r in records],
            "spans": [json.dumps(r["spans"], ensure_ascii=False) for r in records],
            "meta": [json.dumps(r["meta"], ensure_ascii=False, sort_keys=True) for r in records],
        }
    )
    atomic_write_text(path, lambda fh: pq.write_table(table, fh), mode="wb")


def read_output(output_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """All output records of a finished job, sorted by id (for comparisons and tests)."""
    import pyarrow.parquet as pq

    records: list[dict[str, Any]] = []
    for path in sorted(Path(output_dir).glob("part-*")):
        if path.suffix == ".jsonl":
            with open(path, encoding="utf-8") as fh:
                records.extend(json.loads(line) for line in fh if line.strip())
        elif path.suffix == ".parquet":
            for row in pq.read_table(path).to_pylist():
                records.append(
                    {"id": row["id"], "text": row["text"], "spans": json.loads(row["spans"]),
                     "meta": json.loads(row["meta"])}
                )
    return sorted(records, key=lambda r: r["id"])


# --------------------------------------------------------------------------- orchestration


def _run_part_list(
    specs: list[PartitionSpec], settings: BatchSettings, seeds: Sequence[Seed] | None = None
) -> list[dict[str, Any]]:
    return [process_partition(spec, settings, seeds) for spec in specs]


def run_batch(
    inputs: Sequence[str],
    settings: BatchSettings,
    *,
    scheduler: str | None = None,
    workers: int = 2,
    partition_size: int = DEFAULT_PARTITION_SIZE,
    progress: Callable[[int, int], None] | None = None,
) -> BatchSummary:
    """Run the job on a Dask cluster: ``scheduler`` address, or a local cluster of ``workers``."""
    import dask.bag as db
    from distributed import Client, LocalCluster, as_completed

    if settings.output_format not in OUTPUT_FORMATS:
        raise DeidError(f"unknown output format {settings.output_format!r}")
    paths = expand_inputs(inputs)
    specs = plan_partitions(paths, partition_size)
    Path(settings.output_dir).mkdir(parents=True, exist_ok=True)
    # Fail before starting a cluster: a scheme-less model under surrogates, a bad secret, ...
    needs_known = _processor(settings).needs_known
    if not needs_known:
        check_resume(settings)  # with a scope, once the seeds (part of the fingerprint) are known
    started = time.perf_counter()
    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        client = Client(cluster)
    results: list[dict[str, Any]] = []
    try:
        # One bag partition per spec, so map_partitions runs the single-process
        # pipeline once per input slice.
        bag = db.from_sequence(specs, npartitions=max(1, len(specs)))
        seeds: Any = None
        if needs_known:
            # First pass: every partition's seeds, joined in input order (the same
            # order the local engine adds them in), then broadcast once to each worker.
            parts = client.gather(client.compute(bag.map_partitions(_gather_part_list, settings).to_delayed()))
            joined = join_seeds([p for per_bag in parts for p in per_bag])
            settings = replace(settings, known_digest=seeds_digest(bytes.fromhex(settings.secret_hex), joined))
            check_resume(settings)
            seeds = client.scatter(joined, broadcast=True)
        futures = [
            client.submit(_run_part_list, [spec], settings, seeds, pure=False) for spec in specs
        ] if needs_known else client.compute(bag.map_partitions(_run_part_list, settings).to_delayed())
        done = 0
        for future in as_completed(futures):
            part_results = future.result()
            results.extend(part_results)
            done += len(part_results)
            if progress is not None:
                progress(done, len(specs))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    summary = summarise(results, time.perf_counter() - started)
    summary.scope = settings.scope
    spans_dir = Path(settings.output_dir) / "_spans"
    if spans_dir.is_dir() and not any(spans_dir.iterdir()):
        spans_dir.rmdir()
    return summary


def summarise(results: Sequence[dict[str, Any]], seconds: float) -> BatchSummary:
    summary = BatchSummary(partitions=len(results), seconds=round(seconds, 3))
    labels: Counter[str] = Counter()
    masked: Counter[str] = Counter()
    loads: dict[str, int] = {}
    peaks: dict[str, float] = {}
    for r in results:
        summary.documents += r["documents"]
        summary.rejected += r["rejected"]
        labels.update(r["spans_per_label"])
        masked.update(r.get("masked_per_label", {}))
        if r.get("skipped"):
            summary.partitions_skipped += 1
        else:
            summary.documents_this_run += r["documents"]
            if r.get("tagged_once") is not None:
                summary.tagged_once = (summary.tagged_once or 0) + r["tagged_once"]
            pid = str(r["pid"])
            loads[pid] = max(loads.get(pid, 0), r["model_loads"])
            peaks[pid] = max(peaks.get(pid, 0.0), r.get("worker_peak_rss_mb", 0.0))
    summary.spans_per_label = dict(sorted(labels.items()))
    summary.masked_per_label = dict(sorted(masked.items()))
    summary.model_loads = loads
    summary.worker_peak_rss_mb = peaks
    summary.docs_per_second = round(summary.documents_this_run / seconds, 2) if seconds > 0 else 0.0
    return summary
