"""The bundled demo: a project of synthetic English notes pre-annotated by a starter model.

The starter model is trained on a *separate* synthetic set (another seed), so
the queue shows honest mistakes to correct. A slice of the demo notes comes in
with its generated gold spans as the reviewed layer, so the Bias and Model
pages have reviewed notes to measure on from the first minute. Everything
lives in a per-user data directory (or ``DEID_DEMO_DIR``), never in the repo.

``python -m deid_core.demo`` builds it when absent and prints the database URL
the app must use; ``scripts/demo`` then starts Streamlit on it.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import platformdirs

PROJECT = "demo"
MARKER = "demo.json"
Progress = Callable[[str, float], None]


@dataclass(frozen=True)
class DemoConfig:
    n_notes: int = 200
    n_gold: int = 30  # of the n_notes, imported with their gold spans (reviewed layer)
    n_train: int = 150  # starter model's separate training set
    seed: int = 7
    train_seed: int = 1001
    max_iterations: int = 100


def demo_dir() -> Path:
    explicit = os.environ.get("DEID_DEMO_DIR")
    if explicit:
        return Path(explicit)
    return platformdirs.user_data_path("deid-workbench") / "demo"


def demo_database_url(directory: Path) -> str:
    return f"sqlite:///{directory / 'demo.db'}"


def is_built(directory: Path) -> bool:
    return (directory / MARKER).is_file()


def build_demo(
    directory: Path,
    config: DemoConfig | None = None,
    *,
    database_url: str | None = None,
    progress: Progress | None = None,
    out: Any = None,
) -> dict[str, Any]:
    """Build the demo project in ``directory`` (idempotent: a built demo is left alone)."""
    from deid_core.engine.model import TrainConfig, train_model
    from deid_core.schemes import load_scheme
    from deid_core.store import repository as repo
    from deid_core.store.engine import open_store
    from deid_core.store.users import create_user
    from deid_core.synthetic import generate_notes
    from deid_core.ui.bootstrap import ensure_first_admin
    from deid_core.ui.queue import predict_unreviewed

    cfg = config or DemoConfig()
    stream = out if out is not None else sys.stdout
    say: Progress = progress or (lambda message, fraction: None)
    directory.mkdir(parents=True, exist_ok=True)
    marker = directory / MARKER
    if marker.is_file():
        return dict(json.loads(marker.read_text("utf-8")))
    url = database_url or demo_database_url(directory)
    engine = open_store(url)
    ensure_first_admin(engine, out=stream)
    t0 = time.perf_counter()

    say("generating the starter model's training notes", 0.02)
    train_docs = generate_notes(cfg.n_train, seed=cfg.train_seed)
    scheme = load_scheme("i2b2_2014")

    def train_progress(message: str, fraction: float) -> None:
        say(f"training the starter model: {message}", 0.05 + 0.6 * fraction)

    model = train_model(
        train_docs, lang="en", scheme=scheme,
        config=TrainConfig(max_iterations=cfg.max_iterations, seed=cfg.seed),
        progress=train_progress,
        # what a retrain rebuilds to build on the starter (deid_core.learning.retrain)
        corpus={"kind": "synthetic", "lang": "en", "n": cfg.n_train, "seed": cfg.train_seed, "options": {}},
    )
    model_path = model.save(directory / "models" / model.version)

    say("importing the demo notes", 0.7)
    notes = generate_notes(cfg.n_notes, seed=cfg.seed)
    try:
        project = repo.get_project(engine, PROJECT)
    except Exception:  # noqa: BLE001 - NotFound: first build
        project = repo.create_project(engine, PROJECT, lang="en", scheme="i2b2_2014",
                                      # no "strategy": that key means "the queue was scored by
                                      # active learning" (Model page); unscored, the Queue page
                                      # would default to an empty strategy order
                                      settings={"bias": 0.0})
    gold, rest = notes[: cfg.n_gold], notes[cfg.n_gold :]
    if gold:
        repo.import_documents(engine, PROJECT, gold, annotations="gold", fmt="jsonl",
                              source="demo: synthetic notes with gold spans", actor="demo")
    unlabelled = [d.with_spans(()) for d in rest]
    repo.import_documents(engine, PROJECT, unlabelled, annotations="none", fmt="jsonl",
                          source="demo: synthetic notes", actor="demo")
    mv = repo.register_model_version(
        engine, PROJECT, version=model.version, artifact_path=str(model_path),
        n_train_docs=len(train_docs), hyperparams=TrainConfig(max_iterations=cfg.max_iterations).to_dict(),
        metrics={"note": "starter model trained on a separate synthetic set"},
        activate=True, actor="demo",
    )

    def predict_progress(message: str, fraction: float) -> None:
        say(f"pre-annotating: {message}", 0.75 + 0.24 * fraction)

    n_pred = predict_unreviewed(engine, PROJECT, model, model_version=mv.version,
                                model_version_id=mv.id, bias=float(project.settings.get("bias", 0.0)),
                                progress=predict_progress)
    reviewer_password = secrets.token_urlsafe(12)
    create_user(engine, "reviewer", reviewer_password, role="reviewer", actor="demo")
    print(
        "  demo reviewer account (shown once)\n"
        f"    username: reviewer\n    password: {reviewer_password}\n",
        file=stream, flush=True,
    )
    info = {
        "database_url": url,
        "project": PROJECT,
        "model_version": mv.version,
        "model_path": str(model_path),
        "notes": len(notes),
        "gold_notes": len(gold),
        "predicted_notes": n_pred,
        "seconds": round(time.perf_counter() - t0, 1),
        "config": asdict(cfg),
    }
    marker.write_text(json.dumps(info, indent=2), "utf-8")
    say("demo ready", 1.0)
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deid_core.demo", description=__doc__)
    parser.add_argument("--dir", type=Path, default=None, help="demo directory (default: per-user data dir)")
    parser.add_argument("--print-url", action="store_true", help="print the demo database URL and exit")
    args = parser.parse_args(argv)
    directory = args.dir or demo_dir()
    url = os.environ.get("DEID_DATABASE_URL") or demo_database_url(directory)
    if args.print_url:
        print(url)
        return 0
    if is_built(directory):
        print(f"demo already built in {directory}", file=sys.stderr)
        return 0
    from tqdm import tqdm

    bar = tqdm(total=100, desc="building demo", unit="%", file=sys.stderr)

    def progress(message: str, fraction: float) -> None:
        bar.set_postfix_str(message[:60])
        bar.n = int(fraction * 100)
        bar.refresh()

    accounts = io.StringIO()  # printed after the bar, so passwords are not lost in its line
    try:
        info = build_demo(directory, database_url=url, progress=progress, out=accounts)
    finally:
        bar.close()
        print(accounts.getvalue(), flush=True)
    print(f"demo ready in {directory}: {info['notes']} notes, model {info['model_version']}"
          f" ({info['seconds']} s)", flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
