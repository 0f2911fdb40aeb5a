"""Store commands for pipelines: projects, imports, pre-annotation, models, users, schema.

``project create|list``, ``import``, ``predict-queue``, ``models register|list|activate``,
``users add|list|deactivate|activate|reset-password`` and ``db upgrade|info``. Every command opens the store through ``open_store``,
which upgrades the schema first. The database URL comes from ``--db``,
``DEID_DATABASE_URL``, the config file, or the per-user SQLite default.
Output names counts, ids, files and lines, never note text.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ANNOTATION_HELP = (
    "what to do with spans in the files: gold = the reviewed layer (status reviewed),"
    " predictions = a prediction to review, none = ignore them (default: none)"
)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="URL", default=None,
                   help="database URL (default: $DEID_DATABASE_URL, the config file, or a"
                        " per-user SQLite file)")
    p.add_argument("--actor", default=None,
                   help="act as this workbench user: their role is checked for every change"
                        " (it can only narrow what you may do, never widen it)")


ENV_ADMIN_SECRET = "DEID_ADMIN_SECRET"


def admin_secret_path() -> Path:
    """``$DEID_ADMIN_SECRET``, else ``<data dir>/admin.secret`` (data dir as for project secrets)."""
    import platformdirs

    from deid_core.protect.surrogate_map import ENV_DATA_DIR

    explicit = os.environ.get(ENV_ADMIN_SECRET)
    if explicit:
        return Path(explicit)
    base = os.environ.get(ENV_DATA_DIR)
    return (Path(base) if base else platformdirs.user_data_path("deid-workbench")) / "admin.secret"


def _os_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name available (containers)
        return f"uid-{os.getuid()}" if hasattr(os, "getuid") else "unknown"


def _actor(args: argparse.Namespace, engine: Any) -> Any:
    """Who the command acts as, proven rather than declared.

    The command line changes the store only for an operating-system user who
    can read the workbench's admin secret (created 0600 on first use; the
    database keeps its fingerprint and refuses any other secret). Without
    ``--actor`` that user acts as a local administrator (``local-admin:<os
    user>`` in the audit trail); with ``--actor NAME`` the command acts as the
    workbench user NAME, whose role and active flag the library checks, so
    ``--actor`` never grants anything.
    """
    from deid_core.errors import DeidError, PermissionDenied
    from deid_core.protect.surrogate_map import load_or_create_secret, secret_fingerprint
    from deid_core.store.authz import local_admin

    path = admin_secret_path()
    try:
        secret, created = load_or_create_secret(path)
    except (DeidError, OSError):
        raise PermissionDenied(
            f"cannot read the admin secret {path}: only an operating-system user who can read it"
            " may change the store from the command line"
        ) from None
    if created:
        print(f"created admin secret {path} (mode 0600): whoever can read it administers this"
              " workbench from the command line", file=sys.stderr)
    admin = local_admin(engine, secret_fingerprint(secret), _os_user(),
                        declared=str(args.actor) if args.actor else None)
    return str(args.actor) if args.actor else admin


def _engine(args: argparse.Namespace) -> Any:
    from deid_core.store import open_store

    return open_store(args.db)


def tqdm_progress(desc: str) -> tuple[Callable[[str, float], None], Callable[[], None]]:
    """A ``progress(message, fraction)`` callback drawing a tqdm bar on stderr, and its closer."""
    from tqdm import tqdm

    bar = tqdm(total=100, desc=desc, unit="%", file=sys.stderr, leave=False,
               bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix}")

    def progress(message: str, fraction: float) -> None:
        bar.n = round(100 * max(0.0, min(1.0, fraction)))
        bar.set_postfix_str(message, refresh=False)
        bar.refresh()

    return progress, bar.close


def register(subparsers: Any) -> None:
    from deid_core.cli.engine import bias_type

    # project
    p = subparsers.add_parser("project", help="create and list annotation projects")
    sub = p.add_subparsers(dest="project_command", metavar="ACTION")
    c = sub.add_parser("create", help="create a project")
    c.add_argument("name")
    c.add_argument("--lang", choices=("en", "es"), default="en")
    c.add_argument("--scheme", default="i2b2_2014",
                   help="label scheme: i2b2_2014, meddocan, presidio_synth or a YAML path")
    c.add_argument("--bias", type=float, default=None,
                   help="initial O-label bias (default 0; with --starter, the starter's recorded recall bias)")
    c.add_argument("--starter", action="store_true",
                   help="start from the bundled starter model for --lang (built and cached on first"
                        " use) as the first active model version")
    _common(c)
    c.set_defaults(func=run_project_create)
    ls = sub.add_parser("list", help="list projects with document counts")
    _common(ls)
    ls.set_defaults(func=run_project_list)
    p.set_defaults(func=lambda _a: (p.print_help(), 2)[1])

    # import
    i = subparsers.add_parser(
        "import", help="import notes into a project (one all-or-nothing batch)",
        description="Import notes as one transaction: any error stores nothing. Notes whose"
                    " text is already in the project (same sha256) are skipped and listed.")
    i.add_argument("--project", required=True)
    i.add_argument("--format", required=True, choices=("jsonl", "txt", "csv", "brat", "i2b2"))
    i.add_argument("--annotations", choices=("gold", "predictions", "none"), default="none",
                   help=ANNOTATION_HELP)
    i.add_argument("--text-column", default="text", help="CSV: column holding the note")
    i.add_argument("--id-column", default=None, help="CSV: column holding the note id")
    i.add_argument("--patient-column", default=None, help="CSV: column holding the patient id")
    i.add_argument("--delimiter", default=",", help="CSV: field delimiter")
    i.add_argument("--known-column", action="append", default=[], metavar="COLUMN=LABEL",
                   help="CSV: a column of identifiers from the record (patient name, MRN, date of"
                        " birth) and its label; stored with the note as meta.known_phi (repeat)")
    i.add_argument("--quiet", action="store_true", help="no progress bar")
    i.add_argument("paths", nargs="+", metavar="PATH")
    _common(i)
    i.set_defaults(func=run_import)

    # users
    u = subparsers.add_parser("users", help="manage reviewer and admin accounts")
    us = u.add_subparsers(dest="users_command", metavar="ACTION")
    a = us.add_parser("add", help="create an account (password from a prompt or stdin)")
    a.add_argument("name")
    a.add_argument("--role", choices=("admin", "reviewer"), default="reviewer")
    a.add_argument("--password-stdin", action="store_true",
                   help="read the password from the first line of stdin")
    _common(a)
    a.set_defaults(func=run_users_add)
    ul = us.add_parser("list", help="list accounts")
    _common(ul)
    ul.set_defaults(func=run_users_list)
    for name, active in (("deactivate", False), ("activate", True)):
        d = us.add_parser(name, help=f"{name} an account (their work is always kept)")
        d.add_argument("name")
        _common(d)
        d.set_defaults(func=run_users_set_active, active=active)
    r = us.add_parser("reset-password", help="set a new password")
    r.add_argument("name")
    r.add_argument("--password-stdin", action="store_true")
    _common(r)
    r.set_defaults(func=run_users_reset)
    u.set_defaults(func=lambda _a: (u.print_help(), 2)[1])

    # predict-queue
    pq = subparsers.add_parser(
        "predict-queue", help="pre-annotate unreviewed notes with the project's active model",
        description="Predict every new or in-review note with the active model version and store"
                    " the spans with the document log-probability that orders the review queue."
                    " Notes already predicted by that version are skipped unless --redo.")
    pq.add_argument("--project", required=True)
    pq.add_argument("--bias", type=bias_type, default=None, metavar="BIAS|recall",
                    help="O-label bias (default: the project's setting); 'recall': the active"
                         " model's recorded recall bias")
    pq.add_argument("--redo", action="store_true",
                    help="also re-predict notes this model version already predicted")
    pq.add_argument("--limit", type=int, default=None, help="predict at most N notes")
    pq.add_argument("--quiet", action="store_true", help="no progress bar")
    _common(pq)
    pq.set_defaults(func=run_predict_queue)

    # models
    m = subparsers.add_parser("models", help="register, list and activate a project's model versions")
    ms = m.add_subparsers(dest="models_command", metavar="ACTION")
    mr = ms.add_parser("register", help="register a trained model directory with a project")
    mr.add_argument("path", help="model directory written by 'deid-workbench train'")
    mr.add_argument("--project", required=True)
    mr.add_argument("--activate", action="store_true", help="make it the active model")
    mr.add_argument("--parent", default=None, help="version this model was retrained from")
    _common(mr)
    mr.set_defaults(func=run_models_register)
    ml = ms.add_parser("list", help="list model versions (* = active)")
    ml.add_argument("--project", required=True)
    _common(ml)
    ml.set_defaults(func=run_models_list)
    ma = ms.add_parser("activate", help="make a registered version the active model")
    ma.add_argument("version")
    ma.add_argument("--project", required=True)
    _common(ma)
    ma.set_defaults(func=run_models_activate)
    m.set_defaults(func=lambda _a: (m.print_help(), 2)[1])

    # db
    db = subparsers.add_parser("db", help="database schema: upgrade, info")
    ds = db.add_subparsers(dest="db_command", metavar="ACTION")
    up = ds.add_parser("upgrade", help="run migrations up to the latest revision")
    _common(up)
    up.set_defaults(func=run_db_upgrade)
    inf = ds.add_parser("info", help="show the database URL (password hidden) and revision")
    _common(inf)
    inf.set_defaults(func=run_db_info)
    cl = ds.add_parser(
        "cleanup", help="remove folders a killed export or training run left behind",
        description="Removes .<name>.staging-* export folders (under the app's export folder and"
                    " each --under DIR) and deid-train-* temporary folders whose process is gone,"
                    " and the hidden notes of SQLite imports whose process was killed.")
    cl.add_argument("--under", action="append", default=[], metavar="DIR",
                    help="also look for export staging folders directly under DIR (repeatable)")
    cl.add_argument("--dry-run", action="store_true", help="list, do not remove")
    _common(cl)
    cl.set_defaults(func=run_db_cleanup)
    db.set_defaults(func=lambda _a: (db.print_help(), 2)[1])


def run_project_create(args: argparse.Namespace) -> int:
    from deid_core.store.repository import create_project

    engine = _engine(args)
    if args.starter:
        from deid_core.errors import ModelError
        from deid_core.ui.learning import starter_applies

        if not starter_applies(args.lang, args.scheme):
            raise ModelError(f"no starter model for {args.lang!r} notes in scheme {args.scheme!r}")
    info = create_project(engine, args.name, lang=args.lang, scheme=args.scheme,
                          settings={"bias": 0.0 if args.bias is None else args.bias}, actor=_actor(args, engine))
    print(f"created project {info.name!r} (lang {info.lang}, scheme {info.scheme})")
    if args.starter:
        from deid_core.ui.learning import install_starter

        progress, close = tqdm_progress("starter model")
        try:
            result = install_starter(engine, info.name, _actor(args, engine), progress=progress,
                                     use_recall_bias=args.bias is None)
        finally:
            close()
        print(f"active model: starter {result['version']}; O-label bias {result['bias']:g}")
    return 0


def run_project_list(args: argparse.Namespace) -> int:
    from deid_core.store.repository import list_projects, status_counts

    engine = _engine(args)
    projects = list_projects(engine)
    if not projects:
        print("no projects")
    for p in projects:
        counts = status_counts(engine, p.name)
        summary = ", ".join(f"{k} {v}" for k, v in counts.items())
        print(f"{p.name}\t{p.lang}\t{p.scheme}\t{summary}")
    return 0


def _known_columns(specs: list[str]) -> dict[str, str]:
    from deid_core.errors import StoreError

    out = {}
    for spec in specs:
        column, sep, label = spec.partition("=")
        if not sep or not column or not label:
            raise StoreError(f"--known-column {spec!r}: use COLUMN=LABEL")
        out[column] = label
    return out


def run_import(args: argparse.Namespace) -> int:
    from deid_core.store.importers import import_paths

    engine = _engine(args)
    progress, close = (None, lambda: None) if args.quiet else tqdm_progress("import")
    try:
        result = import_paths(
            engine, args.project, args.paths, fmt=args.format, annotations=args.annotations,
            text_column=args.text_column, id_column=args.id_column,
            patient_column=args.patient_column, delimiter=args.delimiter,
            known_columns=_known_columns(args.known_column),
            actor=_actor(args, engine), progress=progress,
        )
    finally:
        close()
    print(f"imported {result.n_imported} notes ({result.n_spans} spans as {args.annotations})"
          f" into {args.project!r}, batch {result.batch_id}")
    print(f"skipped {result.n_duplicates} duplicates (same text already in the project)")
    for dup in result.duplicates[:50]:
        print(f"  duplicate: {dup.external_id} = {dup.existing_external_id}")
    if result.n_duplicates > 50:
        print(f"  ... and {result.n_duplicates - 50} more")
    print("errors: 0")
    return 0


def run_predict_queue(args: argparse.Namespace) -> int:
    from deid_core.store.predict import predict_queue

    engine = _engine(args)
    bias = args.bias
    if isinstance(bias, str):  # "recall": the active model's recorded recall bias
        from deid_core.engine.recall_bias import resolve_bias_for_dir
        from deid_core.errors import ModelError
        from deid_core.store.repository import active_model_version

        mv = active_model_version(engine, args.project)
        if mv is None:
            raise ModelError(f"project {args.project!r} has no active model, so no recall bias")
        bias = resolve_bias_for_dir(bias, mv.artifact_path)
    progress, close = (None, lambda: None) if args.quiet else tqdm_progress("predict")
    try:
        result = predict_queue(engine, args.project, bias=bias, redo=args.redo,
                               limit=args.limit, actor=_actor(args, engine), progress=progress)
    finally:
        close()
    print(f"predicted {result.n_predicted} notes ({result.n_spans} spans) with model"
          f" {result.model_version} at bias {result.bias:g} in {result.seconds:.1f}s")
    print(f"skipped {result.n_skipped} notes already predicted by this model version")
    return 0


def run_models_register(args: argparse.Namespace) -> int:
    from pathlib import Path

    from deid_core.engine.model import DeidModel
    from deid_core.store.repository import register_model_version

    path = Path(args.path).resolve()
    model = DeidModel.load(path)
    engine = _engine(args)
    info = register_model_version(
        engine, args.project, version=model.version, artifact_path=str(path),
        n_train_docs=int(model.metadata.get("documents", 0) or 0),
        hyperparams=model.config.to_dict(), metrics=model.metrics, parent=args.parent,
        activate=args.activate, actor=_actor(args, engine))
    print(f"registered model {info.version} for {args.project!r}"
          f"{' (active)' if info.active else ''}")
    return 0


def run_models_list(args: argparse.Namespace) -> int:
    from deid_core.store.repository import list_model_versions

    for mv in list_model_versions(_engine(args), args.project):
        print(f"{'*' if mv.active else ' '} {mv.version}\t{mv.created_at:%Y-%m-%d %H:%M}"
              f"\t{mv.n_train_docs} docs\t{mv.artifact_path}")
    return 0


def run_models_activate(args: argparse.Namespace) -> int:
    from deid_core.store.repository import activate_model_version

    engine = _engine(args)
    info = activate_model_version(engine, args.project, args.version, actor=_actor(args, engine))
    print(f"active model for {args.project!r} is now {info.version}")
    return 0


def _read_password(args: argparse.Namespace) -> str:
    from deid_core.errors import StoreError

    if args.password_stdin:
        line = sys.stdin.readline()
        return line.rstrip("\r\n")
    if not sys.stdin.isatty():
        raise StoreError("no terminal to prompt for a password: use --password-stdin")
    first = getpass.getpass("password: ")
    if first != getpass.getpass("again: "):
        raise StoreError("the two passwords differ")
    return first


def run_users_add(args: argparse.Namespace) -> int:
    from deid_core.store.users import create_user

    engine = _engine(args)
    actor = _actor(args, engine)
    info = create_user(engine, args.name, _read_password(args), role=args.role, actor=actor)
    print(f"created {info.role} {info.username!r}")
    return 0


def run_users_list(args: argparse.Namespace) -> int:
    from deid_core.store.users import list_users

    for u in list_users(_engine(args)):
        print(f"{u.username}\t{u.role}\t{'active' if u.active else 'inactive'}")
    return 0


def run_users_set_active(args: argparse.Namespace) -> int:
    from deid_core.store.users import set_active

    engine = _engine(args)
    info = set_active(engine, args.name, args.active, actor=_actor(args, engine))
    print(f"{info.username!r} is now {'active' if info.active else 'inactive'}"
          " (annotations, reviews and audit events are kept)")
    return 0


def run_users_reset(args: argparse.Namespace) -> int:
    from deid_core.store.users import reset_password

    engine = _engine(args)
    actor = _actor(args, engine)
    reset_password(engine, args.name, _read_password(args), actor=actor)
    print(f"password reset for {args.name!r}")
    return 0


def run_db_upgrade(args: argparse.Namespace) -> int:
    from deid_core.store.engine import current_revision

    engine = _engine(args)  # open_store upgrades
    print(f"schema at revision {current_revision(engine)}")
    return 0


def debris_roots(extra: list[str] | None = None) -> list[Path]:
    """Where export staging folders appear: the app's export folder, plus any given."""
    import platformdirs

    from deid_core.protect.surrogate_map import ENV_DATA_DIR

    base = os.environ.get(ENV_DATA_DIR)
    data = Path(base) if base else platformdirs.user_data_path("deid-workbench")
    return [data / "exports", *(Path(p) for p in extra or [])]


STALE_IMPORT_S = 24 * 3600


def run_db_cleanup(args: argparse.Namespace) -> int:
    from datetime import datetime, timezone

    from deid_core.protect.cleanup import clean_debris, find_debris
    from deid_core.store.owner import owner_gone
    from deid_core.store.repository import discard_import_batch, unfinished_import_batches

    roots = debris_roots(args.under)
    engine = _engine(args)
    now = datetime.now(timezone.utc)
    # A batch still "importing" whose process is gone (or, unknown, a day old) was killed.
    stale = [b for b, owner, created in unfinished_import_batches(engine)
             if owner_gone(owner) or (owner_gone(owner) is None
                                      and (now - created).total_seconds() > STALE_IMPORT_S)]
    if args.dry_run:
        for path in find_debris(roots):
            print(f"would remove {path}")
        for batch_id in stale:
            print(f"would discard unfinished import batch {batch_id}")
        return 0
    result = clean_debris(roots)
    for path in result.removed:
        print(f"removed {path}")
    print(f"removed {len(result.removed)} folder(s), {result.files} file(s), {result.bytes} bytes")
    if stale:
        actor = _actor(args, engine)
        n = sum(discard_import_batch(engine, batch_id, actor=actor) for batch_id in stale)
        print(f"discarded {n} unfinished import batch(es) of killed processes")
    return 0


def run_db_info(args: argparse.Namespace) -> int:
    from deid_core.store.config import database_url, redacted
    from deid_core.store.engine import create_store_engine, current_revision, head_revision

    url = database_url(args.db)
    engine = create_store_engine(url)
    print(f"database: {redacted(url)}")
    print(f"revision: {current_revision(engine)} (latest {head_revision()})")
    return 0
