"""Background jobs (retrain, re-predict the queue, import) that keep the UI responsive.

A job runs in a daemon thread and reports ``progress(message, fraction)`` into
a small thread-safe record that the page polls on each rerun. Jobs live in a
process-wide registry keyed by name (e.g. ``"train:3"``) so that two admins
cannot start the same retraining twice; the registry holds messages and
numbers, never note text. Only ``DeidError`` messages are shown, because they
are written not to quote notes; any other exception is reported by type only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from deid_core.errors import DeidError

log = logging.getLogger(__name__)

Progress = Callable[[str, float], None]


@dataclass
class Job:
    name: str
    label: str
    status: str = "running"  # running | done | failed
    message: str = "starting"
    fraction: float = 0.0
    result: Any = None
    error: str | None = None
    started: float = field(default_factory=time.time)
    finished: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def progress(self, message: str, fraction: float) -> None:
        with self._lock:
            self.message = message
            self.fraction = min(max(float(fraction), 0.0), 1.0)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "name": self.name, "label": self.label, "status": self.status,
                "message": self.message, "fraction": self.fraction, "error": self.error,
                "started": self.started, "finished": self.finished,
            }

    @property
    def running(self) -> bool:
        return self.status == "running"


_JOBS: dict[str, Job] = {}
_REGISTRY_LOCK = threading.Lock()


def get_job(name: str) -> Job | None:
    with _REGISTRY_LOCK:
        return _JOBS.get(name)


def start_job(name: str, label: str, work: Callable[[Progress], Any]) -> Job:
    """Run ``work(progress)`` in the background; a running job of that name is returned as is."""
    with _REGISTRY_LOCK:
        existing = _JOBS.get(name)
        if existing is not None and existing.running:
            return existing
        job = Job(name, label)
        _JOBS[name] = job

    def run() -> None:
        try:
            result = work(job.progress)
        except DeidError as exc:
            job.error = str(exc)
            job.status = "failed"
            log.warning("job %s failed: %s", name, type(exc).__name__)
        except Exception as exc:  # noqa: BLE001 - reported by type: messages may quote notes
            job.error = f"unexpected {type(exc).__name__} (see the server log)"
            job.status = "failed"
            log.error("job %s failed with %s", name, type(exc).__name__)
        else:
            job.result = result
            job.fraction = 1.0
            job.message = "done"
            job.status = "done"
        finally:
            job.finished = time.time()

    threading.Thread(target=run, name=f"deid-job-{name}", daemon=True).start()
    return job


def ended_unseen(state: MutableMapping[str, Any], job: Job | None) -> bool:
    """True once per session for a job that ended since the page was last drawn in full.

    The page calls it at the top (a full run shows fresh versions, curve and history)
    and the polling fragment calls it too: when the job ends under the fragment, only
    a full rerun refreshes the rest of the page and re-enables its buttons.
    """
    if job is None or job.running:
        return False
    token = f"{job.name}@{job.started}"
    seen = state.setdefault("jobs_seen", set())
    if token in seen:
        return False
    seen.add(token)
    return True


def wait(job: Job, timeout: float = 60.0) -> Job:
    """Block until the job ends (tests and scripts; pages poll instead)."""
    deadline = time.time() + timeout
    while job.running and time.time() < deadline:
        time.sleep(0.02)
    return job
