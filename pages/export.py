"""Export (admin): de-identified corpus with manifest and leak check, downloadable as a zip."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import streamlit as st

from deid_core.errors import DeidError, LeakDetected
from deid_core.protect.export import FORMATS, ExportConfig, export_project
from deid_core.protect.operators import OperatorConfig, OperatorSpec
from deid_core.protect.surrogate_map_db import export_surrogate_mapping
from deid_core.schemes import load_scheme
from deid_core.store.repository import status_counts
from deid_core.ui.exporting import data_dir, project_secret, zip_folder
from deid_core.ui.resources import guard
from deid_core.ui.safe_text import md

ctx = guard("export")
project = ctx.need_project()
st.title("Export")
counts = status_counts(ctx.engine, project.name)
st.caption(f"{counts['reviewed']} reviewed and {counts['new'] + counts['in_review']} unreviewed notes"
           f" in {project.name}.")

MODES = {"surrogate": "Realistic surrogates (names, dates shifted per patient, ...)",
         "tag": "Tags such as \\[\\*\\*PATIENT\\*\\*\\]", "redact": "[REDACTED]"}
mode = st.radio("Replace PHI with", list(MODES), format_func=MODES.get, key="exp_mode")
scheme = load_scheme(project.scheme)
with st.expander("Per-label operators"):
    overrides = {}
    cols = st.columns(3)
    for i, label in enumerate(scheme.names):
        choice = cols[i % 3].selectbox(label, ["(default)", "surrogate", "tag", "redact", "keep"],
                                       key=f"exp_op_{label}")
        if choice != "(default)":
            overrides[label] = OperatorSpec(choice)
formats = st.multiselect("Formats", list(FORMATS), default=["jsonl", "txt"], key="exp_formats")
include = st.checkbox("Include unreviewed notes (model predictions only)", key="exp_include")
confirm = False
if include:
    confirm = st.checkbox(
        "I understand unreviewed notes may still contain PHI the model missed; this is recorded"
        " in the manifest.", key="exp_confirm")
with_mapping = st.checkbox("Also download the surrogate mapping (admin only; keep it safe)",
                           key="exp_mapping")

if st.button("Export", type="primary", disabled=not formats or (include and not confirm),
             key="exp_go"):
    st.session_state["last_export"] = None
    bar = st.progress(0.0, text="Collecting notes")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = data_dir() / "exports" / f"{project.name}-{stamp}"
    try:
        ops = OperatorConfig(lang=project.lang, scheme=project.scheme, default=OperatorSpec(mode),
                             per_label=overrides)
        config = ExportConfig(ops, tuple(formats), include_unreviewed=include)
        # Audit events, the project's surrogate mapping in the database and the
        # all-or-nothing write all come with export_project.
        result = export_project(
            ctx.engine, project.name, out, secret=project_secret(project.id), config=config,
            actor=ctx.user.username, confirm_unreviewed=confirm,
            progress=lambda m, f: bar.progress(min(f, 1.0), text=m),
        )
    except LeakDetected as exc:
        bar.empty()
        st.error(f"Export stopped by the leak check: {md(exc)}")
    except DeidError as exc:
        bar.empty()
        st.error(f"Nothing was exported: {md(exc)}")
    else:
        bar.progress(1.0, text="Done")
        m = result.manifest
        mapping = None
        if with_mapping:
            path = result.path.parent / f"{result.path.name}.mapping.jsonl"
            n = export_surrogate_mapping(ctx.engine, project.name, ctx.user.username, path)
            mapping = {"path": str(path), "entries": n}
        st.session_state["last_export"] = {
            "project": project.name, "path": str(result.path), "mapping": mapping,
            "summary": {k: m[k] for k in ("documents", "spans", "formats", "scope") if k in m},
            "message": f"Exported {m['documents']} notes and {m['spans']} spans to {md(result.path)};"
                       f" leak check: {m['leak_check']['leaks']} leak(s).",
        }

# The downloads are drawn from the session, outside the Export button's branch, and
# download without a rerun (on_click="ignore"): they stay on screen after a click.
last = st.session_state.get("last_export")
if last and last["project"] == project.name and Path(last["path"]).is_dir():
    folder = Path(last["path"])
    st.success(last["message"])
    st.json(last["summary"], expanded=False)
    st.download_button("Download the export (.zip)", zip_folder(folder),
                       file_name=f"{folder.name}.zip", mime="application/zip",
                       key="exp_download", on_click="ignore")
    mapping = last.get("mapping")
    if mapping and Path(mapping["path"]).is_file():
        st.download_button(f"Download the surrogate mapping ({mapping['entries']} entries)",
                           Path(mapping["path"]).read_bytes(), file_name=Path(mapping["path"]).name,
                           key="exp_mapping_download", on_click="ignore")
