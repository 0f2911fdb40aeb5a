"""Background jobs: progress, results, one job per name, errors without note text."""

from __future__ import annotations

import threading

import pytest

from deid_core.errors import CorpusFormatError
from deid_core.ui.jobs import get_job, start_job, wait


def test_job_reports_progress_and_result():
    def work(progress):
        for i in range(4):
            progress(f"step {i}", (i + 1) / 4)
        return 42

    job = wait(start_job("t:ok", "test", work))
    assert job.status == "done" and job.result == 42 and job.fraction == 1.0
    assert get_job("t:ok") is job


def test_same_name_while_running_returns_the_running_job():
    gate = threading.Event()
    first = start_job("t:busy", "test", lambda progress: gate.wait(5))
    second = start_job("t:busy", "test", lambda progress: 1)
    assert second is first
    gate.set()
    wait(first)
    third = start_job("t:busy", "test", lambda progress: 3)
    assert third is not first and wait(third).result == 3


@pytest.mark.parametrize(
    "exc, expected",
    [
        (CorpusFormatError("bad offsets", path="a.jsonl", line=3), "a.jsonl, line 3: bad offsets"),
        (KeyError("Ann Lee lives at 12 Elm St"), "unexpected KeyError (see the server log)"),
    ],
)
def test_failures_never_echo_arbitrary_messages(exc, expected):
    def work(progress):
        raise exc

    job = wait(start_job(f"t:fail:{type(exc).__name__}", "test", work))
    assert job.status == "failed" and job.error == expected
    assert "Ann" not in job.snapshot()["error"]
