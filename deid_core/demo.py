"""The bundled demo: a project of synthetic English notes pre-annotated by the English starter model.

The starter model (``deid_core.synthetic.starter``, the one every new English
project starts from) is trained on other synthetic notes (other patients, the
train template families), so the queue shows honest mistakes to correct. A slice of the demo notes comes in
with its generated gold spans as the reviewed layer, so the Bias and Model
pages have reviewed notes to measure on from the first minute. Everything
lives in ``demo/`` under the data directory (or ``DEID_DEMO_DIR``), never in the repo;
the app then runs with that directory as its data directory (exports, secrets, models).

``python -m deid_core.demo`` builds it when absent and prints the database URL
the app must use; ``scripts/demo`` then starts Streamlit on it.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import secrets
import shlex
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from deid_core.ui.exporting import data_dir

PROJECT = "demo"
MARKER = "demo.json"
Progress = Callable[[str, float], None]


@dataclass(frozen=True)
class DemoConfig:
    n_notes: int = 200
    n_gold: int = 30  # of the n_notes, imported with their gold spans (reviewed layer)
    seed: int = 7


def demo_dir() -> Path:
    """``DEID_DEMO_DIR``, else ``demo/`` under the data directory (``DEID_DATA_DIR``)."""
    explicit = os.environ.get("DEID_DEMO_DIR")
    if explicit:
        return Path(explicit)
    return data_dir() / "demo"


def demo_environment(directory: Path) -> dict[str, str]:
    """What the app needs to run on the demo: its database, and the demo directory as the
    one data directory, so that exports, secrets and retrained models land beside the
    demo's database instead of in the per-user directory."""
    return {
        "DEID_DATABASE_URL": os.environ.get("DEID_DATABASE_URL") or demo_database_url(directory),
        "DEID_DATA_DIR": str(directory),
        "DEID_DEMO_DIR": str(directory),  # the data directory moved: keep finding the demo
    }


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
    from deid_core.engine.model import DeidModel
    from deid_core.store import repository as repo
    from deid_core.store.authz import Principal
    from deid_core.store.engine import open_store
    from deid_core.store.users import create_user
    from deid_core.synthetic import REALISTIC, generate_notes
    from deid_core.synthetic.starter import ensure_starter
    from deid_core.ui.bias import model_recall_bias
    from deid_core.ui.bootstrap import ensure_first_admin
    from deid_core.ui.queue import predict_notes, predict_unreviewed

    DEMO = Principal("demo")  # noqa: N806 - the demo builder: in-process code holding the database

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

    say("the English starter model", 0.02)

    def starter_progress(message: str, fraction: float) -> None:
        say(message, 0.02 + 0.66 * fraction)

    starter_path = ensure_starter("en", progress=starter_progress)
    # A copy beside the demo: the starter cache is replaced when the code changes,
    # and a registered model version must keep its directory.
    model_path = directory / "models" / starter_path.name
    if not model_path.is_dir():
        tmp = model_path.with_name(f".{model_path.name}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(starter_path, tmp)
        tmp.rename(model_path)
    model = DeidModel.load(model_path)

    say("importing the demo notes", 0.7)
    # Notes in every genre and style, written from the dev template families:
    # wording the starter was not trained on.
    notes = generate_notes(cfg.n_notes, seed=cfg.seed, families="dev", **REALISTIC)
    try:
        project = repo.get_project(engine, PROJECT)
    except Exception:  # noqa: BLE001 - NotFound: first build
        project = repo.create_project(engine, PROJECT, lang="en", scheme="i2b2_2014",
                                      # no "strategy": that key means "the queue was scored by
                                      # active learning" (Model page); unscored, the Queue page
                                      # would default to an empty strategy order
                                      # recall first: the starter's recorded recall bias, as a
                                      # new project from the starter gets (ui.learning.install_starter)
                                      settings={"bias": model_recall_bias(model) or 0.0})
    gold, rest = notes[: cfg.n_gold], notes[cfg.n_gold :]
    if gold:
        repo.import_documents(engine, PROJECT, gold, annotations="gold", fmt="jsonl",
                              source="demo: synthetic notes with gold spans", actor=DEMO)
    unlabelled = [d.with_spans(()) for d in rest]
    repo.import_documents(engine, PROJECT, unlabelled, annotations="none", fmt="jsonl",
                          source="demo: synthetic notes", actor=DEMO)
    mv = repo.register_model_version(
        engine, PROJECT, version=model.version, artifact_path=str(model_path),
        n_train_docs=int(model.metadata.get("documents", 0)), hyperparams=model.config.to_dict(),
        metrics={"note": "the English starter model (synthetic notes, other patients)",
                 "recall_bias": model.metadata.get("recall_bias")},
        activate=True, actor=DEMO,
    )

    def predict_progress(message: str, fraction: float) -> None:
        say(f"pre-annotating: {message}", 0.75 + 0.24 * fraction)

    bias = float(project.settings.get("bias", 0.0))
    n_pred = predict_unreviewed(engine, PROJECT, model, model_version=mv.version,
                                model_version_id=mv.id, bias=bias, progress=predict_progress)
    # The reviewed slice gets the starter's prediction too: what a reviewer would have
    # corrected. The Export page's estimate of the PHI left and the Model page's rule
    # table measure from it. The starter never saw these notes (other patients, dev families).
    predict_notes(engine, PROJECT, model, ((repo.find_document(engine, PROJECT, d.id), d) for d in gold),
                  total=len(gold), model_version=mv.version, model_version_id=mv.id, bias=bias)
    reviewer_password = secrets.token_urlsafe(12)
    create_user(engine, "reviewer", reviewer_password, role="reviewer", actor=DEMO)
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
    parser.add_argument("--print-env", action="store_true",
                        help="print shell `export` lines for the app (database URL, data directory)")
    args = parser.parse_args(argv)
    directory = args.dir or demo_dir()
    url = os.environ.get("DEID_DATABASE_URL") or demo_database_url(directory)
    if args.print_url:
        print(url)
        return 0
    if args.print_env:
        for name, value in demo_environment(directory).items():
            print(f"export {name}={shlex.quote(value)}")
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
