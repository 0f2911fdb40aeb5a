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
from collections.abc import Callable
from pathlib import Path

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
