"""``deidentify`` (model -> de-identified JSONL, for pipelines) and ``export`` (store -> files).

Both leak-check their output and refuse to write it when an original PHI
string is still there (``--allow-leaks`` writes anyway and says so). Output
names documents, offsets, labels and counts, never note text.

The secret: surrogates and date shifts are derived from a per-project secret,
so re-running with the same secret gives the same surrogates and offsets
(needed to add notes to a released corpus consistently), and without it
nobody can link a surrogate to its original. If ``--secret-file`` is not
given, a random secret is created beside the output (``<output>.secret``,
mode 0600) and reused by later runs with the same output path; ``export``
uses one secret per project (``surrogate_map.default_secret_path``) so every
export of a project agrees. Keep secrets apart from the released files.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from deid_core.errors import LeakDetected, PermissionDenied, UnsupportedFormat
from deid_core.protect.surrogate_map import load_or_create_secret, read_secret

__all__ = ["read_secret", "register", "run_deidentify", "run_export", "secret_for"]

EXIT_LEAK = 3  # export refused by the leak check
EXIT_REJECTS = 4  # deidentify wrote the clean notes; some went to rejects


def secret_for(output: str | os.PathLike[str], secret_file: str | None) -> tuple[bytes, Path, bool]:
    """``(secret, path, created)``: the given file, or ``<output>.secret`` (created 0600 if new)."""
    if secret_file:
        return read_secret(secret_file), Path(secret_file), False
    path = Path(f"{os.fspath(output).rstrip('/')}.secret")
    secret, created = load_or_create_secret(path)
    return secret, path, created


def _operator_settings(args: argparse.Namespace, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """Project settings, then the ``--operators`` YAML on top (``--mode`` is applied last)."""
    raw: dict[str, Any] = dict(base or {})
    if getattr(args, "operators", None):
        try:
            loaded = yaml.safe_load(Path(args.operators).read_text("utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise UnsupportedFormat(
                f"{args.operators}: cannot read operator settings ({type(exc).__name__})"
            ) from None
        if not isinstance(loaded, dict):
            raise UnsupportedFormat(f"{args.operators}: operator settings must be a mapping")
        raw.update(loaded)
    return raw


# ----------------------------------------------------------------- deidentify


def run_deidentify_dask(args: argparse.Namespace) -> int:
    """``--engine dask``: the same per-note path, run per partition on a Dask cluster."""
    from tqdm import tqdm

    from deid_core.protect.batch import BatchSettings, run_batch

    secret, secret_path, created = secret_for(args.output, args.secret_file)
    if created:
        print(f"created secret {secret_path} (mode 0600): keep it to re-run consistently", file=sys.stderr)
    ops = _operator_settings(args)
    settings = BatchSettings(
        model_dir=args.model, output_dir=args.output, mode=args.mode or "surrogate",
        secret_hex=secret.hex(), bias=args.bias, patient_key=args.patient_key,
        id_column=args.id_column, text_column=args.text_column, output_format=args.format,
        operator_settings=json.dumps(ops, sort_keys=True) if ops else None,
        unknown_labels=args.unknown_labels, restart=args.restart,
        keep_ids=args.keep_ids, allow_leaks=args.allow_leaks, propagate=not args.no_propagate,
        scope=args.scope, seed_min_score=args.seed_min_score,
    )
    bar = tqdm(total=None, desc="partitions", unit="part", file=sys.stderr)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    try:
        summary = run_batch(
            args.input, settings, scheduler=args.scheduler, workers=args.workers,
            partition_size=args.partition_size, progress=progress,
        )
    finally:
        bar.close()
    print(json.dumps(summary.to_json(), indent=1))
    print(
        f"{summary.documents} document(s) de-identified, {summary.rejected} rejected"
        f" (see {os.path.join(args.output, 'rejects')}), {summary.partitions_skipped} of"
        f" {summary.partitions} partition(s) already done, {summary.docs_per_second} docs/s;"
        f" {sum(summary.masked_per_label.values())} span(s) masked from other notes of the {args.scope}"
        f" (see {os.path.join(args.output, 'masked')})",
        file=sys.stderr,
    )
    return EXIT_REJECTS if summary.rejected else 0


def _resolve_model_and_bias(args: argparse.Namespace) -> None:
    """``--model`` defaults to the starter for ``--lang``; ``--bias recall`` to its recorded value."""
    from deid_core.cli.engine import model_dir
    from deid_core.engine.recall_bias import resolve_bias_for_dir

    args.model = model_dir(args)
    args.bias = resolve_bias_for_dir(args.bias, args.model)


def run_deidentify(args: argparse.Namespace) -> int:
    """One process, one JSONL input: the same reading, per-note step and rejects as
    ``--engine dask`` (``batch.read_partition`` and ``batch.process_note``)."""
    from tqdm import tqdm

    _resolve_model_and_bias(args)
    if args.engine == "dask":
        return run_deidentify_dask(args)
    if len(args.input) != 1:
        print("error: the local engine takes one --input file; use --engine dask for globs", file=sys.stderr)
        return 2
    args.input = args.input[0]

    from dataclasses import asdict

    from deid_core.corpus import atomic_write_text
    from deid_core.engine.model import freeze_loaded_heap
    from deid_core.protect.batch import (
        BatchSettings,
        Reject,
        gather_partition,
        plan_partitions,
        process_note,
        read_partition,
    )
    from deid_core.protect.deidentify import Deidentifier, SpanReplay

    secret, secret_path, created = secret_for(args.output, args.secret_file)
    # The same per-note path as the Dask batch job, so both give the same bytes.
    proc = Deidentifier.from_model_dir(
        args.model, mode=args.mode, secret=secret, bias=args.bias, settings=_operator_settings(args),
        unknown_labels=args.unknown_labels,
        keep_ids=args.keep_ids, allow_leaks=args.allow_leaks, propagate=not args.no_propagate,
        scope=args.scope, seed_min_score=args.seed_min_score,
    )
    freeze_loaded_heap()
    if created:
        print(f"created secret {secret_path} (mode 0600): keep it to re-run consistently", file=sys.stderr)
    settings = BatchSettings(
        model_dir=args.model, output_dir=str(Path(args.output).parent), mode=args.mode or "surrogate",
        secret_hex="", patient_key=args.patient_key,
    )
    specs = plan_partitions([args.input], args.partition_size)
    rejects_path = Path(f"{args.output}.rejects.jsonl")
    masked_path = Path(f"{args.output}.masked.jsonl")
    counts = {"documents": 0, "rejected": 0, "rejected_leaks": 0, "spans": 0, "leaking_written": 0}
    rejects: list[Reject] = []
    masked: list[dict[str, Any]] = []
    known = None
    if proc.needs_known:
        # First pass: the seeds of every note (memory: the distinct strings), in the
        # order the Dask engine joins them, so both build the same index. Its spans
        # are kept on disk and replayed, so the second pass does not tag again.
        known = proc.new_known()
        proc.replay = SpanReplay()
        with tqdm(desc=f"gathering PHI strings ({args.scope} scope)", unit="part", total=len(specs),
                  file=sys.stderr) as gather_bar:
            for spec in specs:
                for doc_id, patient, label, value in gather_partition(proc, spec, settings):
                    proc.add_seeds(known, doc_id, patient, [(label, value)])
                gather_bar.update(1)
        proc.replay.start_replay()
    bar = tqdm(desc="de-identifying", unit="doc", file=sys.stderr)

    def write(fh: Any) -> None:
        for spec in specs:
            for item in read_partition(spec, settings):
                bar.update(1)
                outcome = item if isinstance(item, Reject) else process_note(proc, spec, *item, known, masked)
                if isinstance(outcome, Reject):
                    rejects.append(outcome)
                    counts["rejected"] += 1
                    counts["rejected_leaks"] += outcome.reason.startswith("leak check:")
                    continue
                fh.write(json.dumps(outcome, ensure_ascii=False) + "\n")
                counts["documents"] += 1
                counts["spans"] += len(outcome["spans"])

    try:
        atomic_write_text(args.output, write)
    finally:
        bar.close()
        if proc.replay is not None:
            proc.replay.close()
    atomic_write_text(
        rejects_path, lambda fh: fh.writelines(json.dumps(asdict(r), ensure_ascii=False) + "\n" for r in rejects)
    )
    if known is not None:
        atomic_write_text(
            masked_path, lambda fh: fh.writelines(json.dumps(m, ensure_ascii=False) + "\n" for m in masked)
        )
    by_label: dict[str, int] = {}
    for m in masked:
        by_label[m["label"]] = by_label.get(m["label"], 0) + 1
    summary = {
        "documents": counts["documents"], "rejected": counts["rejected"],
        "rejected_by_leak_check": counts["rejected_leaks"],
        "rejected_bad_records": counts["rejected"] - counts["rejected_leaks"],
        "spans": counts["spans"], "output": str(args.output), "rejects": str(rejects_path),
        "mode": proc.operators.default.kind, "model": proc.model.version, "bias": args.bias,
        "allow_leaks": args.allow_leaks, "ids": "kept" if args.keep_ids else "pseudonymised",
        "scope": args.scope, "masked_per_label": dict(sorted(by_label.items())),
        "masked": str(masked_path) if known is not None else None,
        # notes whose first-pass spans the second pass reused instead of tagging again
        "tagged_once": proc.replay.reused if proc.replay is not None else None,
    }
    print(json.dumps(summary, indent=1))
    print(
        f"wrote {counts['documents']} document(s) to {args.output}; {counts['rejected']} rejected"
        f" ({counts['rejected_leaks']} by the leak check) to {rejects_path}",
        file=sys.stderr,
    )
    return EXIT_REJECTS if rejects else 0


# ----------------------------------------------------------------- export


def run_export(args: argparse.Namespace) -> int:
    from deid_core.cli.store import _actor, tqdm_progress
    from deid_core.protect.deidentify import operator_config
    from deid_core.protect.export import ExportConfig, export_project
    from deid_core.protect.surrogate_map import default_secret_path
    from deid_core.protect.surrogate_map_db import check_mapping_export, export_surrogate_mapping
    from deid_core.store import open_store
    from deid_core.store.repository import get_project

    if not args.output and not args.mapping_out:
        print("error: give --output (a new export) and/or --mapping-out (the surrogate mapping)",
              file=sys.stderr)
        return 2
    engine = open_store(args.db)
    actor = _actor(args, engine)
    if args.output:
        from deid_core.cli.store import debris_roots
        from deid_core.protect.cleanup import clean_debris

        # A killed export left its staging folder beside the target: remove it now.
        clean_debris(debris_roots([str(Path(args.output).resolve().parent)]))
    project = get_project(engine, args.project)
    if args.mapping_out:
        # Checked first, so a refused mapping export costs nothing (the refusal is audited).
        check_mapping_export(engine, args.project, actor)
    if not args.output:
        n = export_surrogate_mapping(engine, args.project, actor, args.mapping_out)
        print(f"wrote {n} mapping entries of {args.project!r} to {args.mapping_out}")
        return 0
    ops = operator_config(
        lang=project.lang, scheme=project.scheme, mode=args.mode,
        settings=_operator_settings(args, project.settings.get("export_operators")),
    )
    formats = tuple(f for group in (args.format or ["jsonl"]) for f in group.split(",") if f)
    config = ExportConfig(ops, formats, include_unreviewed=args.include_unreviewed,
                          leak_scope=args.leak_scope, allow_leaks=args.allow_leaks,
                          propagate=not args.no_propagate, keep_ids=args.keep_ids)
    # One secret per project (not per export), so every export of the project agrees.
    secret_path = Path(args.secret_file) if args.secret_file else default_secret_path(project.id)
    secret, created = load_or_create_secret(secret_path)
    if created:
        print(f"created project secret {secret_path} (mode 0600): keep it, and keep it private",
              file=sys.stderr)
    progress, close = tqdm_progress("export")
    try:
        # Surrogates used are recorded in the project's mapping in the database.
        result = export_project(
            engine, args.project, args.output, secret=secret, config=config, actor=actor,
            confirm_unreviewed=args.yes, progress=progress,
        )
    except LeakDetected as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_LEAK
    except PermissionDenied as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        close()
    if args.mapping_out:
        n = export_surrogate_mapping(engine, args.project, actor, args.mapping_out)
        print(f"wrote {n} mapping entries of {args.project!r} to {args.mapping_out}")
    m = result.manifest
    print(
        f"exported {m['documents']} document(s), {m['spans']} span(s) as {', '.join(m['formats'])}"
        f" to {result.path}; leak check ({m['leak_check']['scope']} scope):"
        f" {m['leak_check']['leaks']} leak(s); {len(result.propagated)} other occurrence(s) of known"
        f" PHI masked; ids {'kept' if config.keep_ids else 'pseudonymised'}"
    )
    return 0


def register(subparsers: Any) -> None:
    from deid_core.cli.engine import add_bias_argument, add_model_arguments
    from deid_core.protect.export import FORMATS

    d = subparsers.add_parser(
        "deidentify", help="de-identify a JSONL corpus with a model (no review), for pipelines",
        description="Predict PHI with a model and write de-identified JSONL (spans over the new"
                    " text). Each note is leak-checked; a leaking note goes to rejects (with its id,"
                    " offsets and reason) instead of the output, and the exit code is 4.",
    )
    add_model_arguments(d)
    d.add_argument("--input", required=True, nargs="+",
                   help="JSONL corpus (shared format); with --engine dask also Parquet/CSV paths or globs")
    d.add_argument("--output", required=True,
                   help="de-identified JSONL to write (with --engine dask: an output folder)")
    d.add_argument("--engine", choices=("local", "dask"), default="local",
                   help="local: one process; dask: partitions on a Dask cluster (see docs/batch.md)")
    d.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="with --engine dask: an existing cluster's scheduler (default: a local cluster)")
    d.add_argument("--workers", type=int, default=2,
                   help="with --engine dask and no --scheduler: local worker processes (default 2)")
    d.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl",
                   help="with --engine dask: output partition format")
    d.add_argument("--partition-size", type=int, default=2000,
                   help="notes per partition (JSONL lines / Parquet rows); the local engine reads"
                        " one partition at a time")
    d.add_argument("--id-column", default="id", help="Parquet/CSV input: the id column")
    d.add_argument("--text-column", default="text", help="Parquet/CSV input: the note text column")
    d.add_argument("--mode", choices=("surrogate", "tag", "redact"), default=None,
                   help="one operator for every label (default: surrogate)")
    d.add_argument("--operators", metavar="YAML", help="per-label operator settings (see docs/export.md)")
    add_bias_argument(d)
    d.add_argument("--unknown-labels", choices=("error", "tag"), default="error",
                   help="labels with no surrogate kind under --mode surrogate: error (default) or"
                        " tag them")
    d.add_argument("--restart", action="store_true",
                   help="with --engine dask: discard partitions an earlier run with other"
                        " settings wrote, instead of refusing to resume")
    d.add_argument("--patient-key", default="meta.patient_id",
                   help="where the patient id is in each document (default: meta.patient_id;"
                        " for Parquet/CSV a column, 'meta.X' meaning column X if present);"
                        " documents without one are their own patient")
    d.add_argument("--secret-file", help="project secret (default: <output>.secret, created if missing)")
    d.add_argument("--no-propagate", action="store_true",
                   help="do not mark other occurrences of confidently tagged PHI (in the note or"
                        " in the scope)")
    d.add_argument("--scope", choices=("document", "patient", "corpus"), default="patient",
                   help="where PHI strings the model tagged confidently in one note are also masked"
                        " and leak-checked: the note, every note of the same patient (default), or"
                        " every note of the input; patient and corpus read the input twice")
    d.add_argument("--seed-min-score", type=float, default=None, metavar="P",
                   help="marginal probability at which a tagged span seeds the scope"
                        " (default: the model's propagate_min_score: 0.9, 0.7 for the bundled English starter)")
    d.add_argument("--keep-ids", action="store_true",
                   help="write original ids, patient keys and source paths instead of HMAC pseudonyms")
    d.add_argument("--allow-leaks", action="store_true",
                   help="write notes even if their leak check fails (they are still reported)")
    d.set_defaults(func=run_deidentify)

    e = subparsers.add_parser(
        "export", help="export a project's reviewed documents as a de-identified corpus",
        description="Reviewed documents only, unless --include-unreviewed --yes. Writes the"
                    " chosen formats, leak_report.json and manifest.json into a new folder.",
    )
    e.add_argument("--project", required=True)
    e.add_argument("--output", help="new (or empty) folder to create (may be left out with --mapping-out)")
    e.add_argument("--format", action="append", metavar="FMT",
                   help=f"one or more of {', '.join(FORMATS)} (repeat or comma-separate; default jsonl)")
    e.add_argument("--mode", choices=("surrogate", "tag", "redact"), default=None,
                   help="one operator for every label (default: the project's settings, else surrogate)")
    e.add_argument("--operators", metavar="YAML", help="per-label operator settings")
    e.add_argument("--include-unreviewed", action="store_true",
                   help="also export unreviewed documents with model predictions (needs --yes)")
    e.add_argument("--yes", action="store_true", help="confirm --include-unreviewed")
    e.add_argument("--secret-file",
                   help="project secret (default: secrets/project-<id>.secret under $DEID_DATA_DIR"
                        " or the per-user data directory, as the app uses; created if missing)")
    e.add_argument("--leak-scope", choices=("document", "patient", "corpus"), default="corpus",
                   help="where PHI strings are masked and searched: each note, each patient's notes,"
                        " or the whole export (default)")
    e.add_argument("--no-propagate", action="store_true",
                   help="do not mask other occurrences of the export's PHI strings (the leak check still runs)")
    e.add_argument("--keep-ids", action="store_true",
                   help="write original document ids, patient keys and source paths (admin only, via"
                        " --actor; recorded in the manifest) instead of HMAC pseudonyms")
    e.add_argument("--allow-leaks", action="store_true", help="write even if the leak check fails")
    e.add_argument("--mapping-out", metavar="JSONL",
                   help="write the project's surrogate mapping from the database (HMAC keys ->"
                        " surrogates), after the export if --output is given; admin only (--actor)")
    e.add_argument("--db", metavar="URL", default=None, help="database URL")
    e.add_argument("--actor", default=None, help="user recorded in the audit trail")
    e.set_defaults(func=run_export)
