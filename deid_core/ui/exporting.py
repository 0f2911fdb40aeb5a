"""Export page logic: gather the project's notes, keep a per-project secret, zip the result.

The secret (surrogates and date shifts derive from it) lives in a 0600 file in
the per-user data directory, never in the database or the repository, so the
same project re-exports with the same surrogates and a stolen database alone
cannot reverse them.
"""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import platformdirs

Progress = Callable[[str, float], None]
SECRET_BYTES = 32


def data_dir() -> Path:
    explicit = os.environ.get("DEID_DATA_DIR")
    return Path(explicit) if explicit else platformdirs.user_data_path("deid-workbench")


def project_secret(project_id: int) -> bytes:
    """The project's export secret (created 0600 on first use), shared with the CLI's export."""
    from deid_core.protect.surrogate_map import default_secret_path, load_or_create_secret

    return load_or_create_secret(default_secret_path(project_id))[0]


def zip_folder(folder: Path) -> bytes:
    """The export folder as zip bytes for a download button."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(folder.parent).as_posix())
    return buf.getvalue()


#: The Review page's address; it reads ``doc`` (the note's id in the store),
#: ``start`` and ``end`` (offsets into the original note) from the query string.
REVIEW_PAGE = "review"


def review_link(db_id: int, start: int | None, end: int | None) -> str:
    """A link that opens a note in Review at an offset (query parameters, no text).

    Review reads ``doc`` and ``offset`` (the hit's start); ``end`` is not needed
    there: the editor scrolls to and marks the token at the offset.
    """
    query = {"doc": int(db_id)}
    if start is not None and end is not None:
        query |= {"offset": int(start)}
    return f"{REVIEW_PAGE}?{urlencode(query)}"


def leak_rows(report: Any, review_ids: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The leak check's failing hits as table rows: where, what kind, and a Review link.

    Offsets are those of the original note (what a reviewer sees) when the hit is
    in the note text, else those inside the meta field. No row carries note text.
    """
    rows = []
    for h in report.leaks:
        in_text = h.field == "text"
        start = h.orig_start if in_text and h.orig_start is not None else h.start
        end = h.orig_end if in_text and h.orig_end is not None else h.end
        db_id = review_ids.get(h.doc_id)
        rows.append({
            "document": h.doc_id,
            "where": h.field,
            "start": start,
            "end": end,
            "label": h.label,
            "match": h.match,
            "from document": h.source_doc_id,
            "open": review_link(db_id, start if in_text else None, end if in_text else None)
            if db_id is not None else None,
        })
    return rows


def estimate_lines(estimate: Mapping[str, Any]) -> list[str]:
    """Plain sentences for the Export page from ``protect.export.project_estimate``."""
    lines = []
    target = estimate.get("target_per_1000_notes")
    for name, what in (("reviewed", "all reviewed notes"), ("audit", "the random audit sample")):
        est = estimate.get(name)
        if not est:
            lines.append(f"From {what}: no reviewed note with a stored prediction yet.")
            continue
        verdict = ""
        if target is not None:
            verdict = (" Under the target: the stopping rule is met." if est.get("below_target")
                       else " Not yet under the target: review more of the audit sample.")
        lines.append(
            f"From {what} ({est['documents']} notes): about {est['per_1000_notes']:.0f} PHI characters"
            f" missed per 1,000 notes (95% interval {est['low']:.0f} to {est['high']:.0f});"
            f" character recall {est['char_recall']:.4f}.{verdict}"
        )
    return lines
