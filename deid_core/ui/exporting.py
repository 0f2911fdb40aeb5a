"""Export page logic: gather the project's notes, keep a per-project secret, zip the result.

The secret (surrogates and date shifts derive from it) lives in a 0600 file in
the per-user data directory, never in the database or the repository, so the
same project re-exports with the same surrogates and a stolen database alone
cannot reverse them.
"""

from __future__ import annotations

import io
import os
import secrets
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy.engine import Engine

from deid_core.store import repository as repo

Progress = Callable[[str, float], None]
SECRET_BYTES = 32


def data_dir() -> Path:
    explicit = os.environ.get("DEID_DATA_DIR")
    return Path(explicit) if explicit else platformdirs.user_data_path("deid-workbench")


def project_secret(project_id: int, *, base: Path | None = None) -> bytes:
    """The project's export secret, created (mode 0600) on first use."""
    path = (base or data_dir()) / "secrets" / f"project-{project_id}.secret"
    if path.is_file():
        return bytes.fromhex(path.read_text("ascii").strip())
    path.parent.mkdir(parents=True, exist_ok=True)
    value = secrets.token_bytes(SECRET_BYTES)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(value.hex() + "\n")
    return value


def export_items(engine: Engine, project: str, *, include_unreviewed: bool) -> list[Any]:
    """Reviewed notes with their reviewers and model provenance; unreviewed ones on request."""
    from deid_core.export import ExportItem

    items = []
    for doc in repo.reviewed_corpus(engine, project):
        layers = repo.get_document(engine, int(doc.meta["db_id"]))
        reviewers = tuple(sorted({a.author for a in layers.annotations if a.author}))
        pred = layers.prediction
        items.append(ExportItem(doc, True, doc.meta.get("patient_id"), reviewers,
                                pred.model_version if pred else None, pred.bias if pred else None))
    if include_unreviewed:
        for db_id, doc in repo.unreviewed_documents(engine, project):
            pred = repo.get_document(engine, db_id).prediction
            items.append(ExportItem(doc.with_spans(pred.spans if pred else ()), False,
                                    doc.meta.get("patient_id"), (),
                                    pred.model_version if pred else None,
                                    pred.bias if pred else None))
    return items


def zip_folder(folder: Path) -> bytes:
    """The export folder as zip bytes for a download button."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(folder.parent).as_posix())
    return buf.getvalue()
