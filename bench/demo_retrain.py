"""The retrain round a reviewer's save starts, on the real demo: prints JSON.

    PYTHONPATH=. .venv/bin/python bench/demo_retrain.py [--dir DIR]

Builds the demo (``deid_core.demo.build_demo``, the starter as ``./scripts/demo``
gets it) in ``--dir`` (default: a temporary directory) and runs
``retrain_project`` as ``policy_actor("reviewer")``, exactly what
``maybe_retrain`` starts in the background after a reviewer's save once the
project's ``retrain_every`` is reached. Issue 13's demo case: the candidate
should be accepted unless it really is worse; the round should take <= 30 s on
one core. The output holds no note text.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deid_core.demo import PROJECT, build_demo, demo_environment  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", help="demo directory (built there if it is not built yet)")
    args = ap.parse_args()
    directory = Path(args.dir or tempfile.mkdtemp(prefix="deid-demo-retrain-"))
    os.environ.update(demo_environment(directory))
    build_demo(directory, out=io.StringIO())  # the printed passwords are not needed
    from deid_core.store import repository as repo
    from deid_core.store.engine import open_store
    from deid_core.ui.learning import policy_actor, retrain_project

    engine = open_store(os.environ["DEID_DATABASE_URL"])
    project = PROJECT
    reviewed = repo.count_documents(engine, project, ("reviewed",))
    c0, w0 = time.process_time(), time.perf_counter()
    summary = retrain_project(engine, project, policy_actor("reviewer"))
    print(json.dumps({
        "reviewed_notes": reviewed, **summary,
        "round_cpu_s_with_repredict": round(time.process_time() - c0, 1),
        "round_wall_s_with_repredict": round(time.perf_counter() - w0, 1),
        "load_average": os.getloadavg(),
    }, indent=1))


if __name__ == "__main__":
    main()
