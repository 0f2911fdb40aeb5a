"""How a page shows a background job: its progress bar while it runs, its escaped error if it fails.

One place, so that every page shows jobs alike and no job's error text reaches
Streamlit's markdown unescaped (it can quote a file name or an id).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from deid_core.ui.jobs import Job
from deid_core.ui.safe_text import md


def show_job(job: Job | None, *, running: str | None = None, failed: str | None = None
             ) -> dict[str, Any] | None:
    """Draw a running or failed job; return its snapshot once it has finished (else None).

    ``running`` and ``failed`` prefix the progress text and the error; by
    default the job's own label ("Retrain: ...", "Retrain failed: ...").
    """
    if job is None:
        return None
    snap = job.snapshot()
    if snap["status"] == "running":
        st.progress(snap["fraction"], text=f"{running or snap['label']}: {snap['message']}")
    elif snap["status"] == "failed":
        st.error(f"{failed or snap['label'] + ' failed'}: {md(snap['error'])}")
    else:
        return snap
    return None
