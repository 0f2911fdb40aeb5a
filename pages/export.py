"""Export (admin): de-identified corpus with manifest and leak check, downloadable as a zip."""

from __future__ import annotations

import secrets
from datetime import datetime, timezone
from pathlib import Path

import streamlit as st

from deid_core.errors import DeidError, LeakDetected
from deid_core.protect.estimate import draw_audit_sample
from deid_core.protect.export import FORMATS, ExportConfig, export_project, project_estimate
from deid_core.protect.operators import OperatorConfig, OperatorSpec
from deid_core.protect.surrogate_map_db import export_surrogate_mapping
from deid_core.schemes import load_scheme
from deid_core.store.repository import status_counts, update_project_settings
from deid_core.ui.exporting import data_dir, estimate_lines, leak_rows, project_secret, zip_folder
from deid_core.ui.resources import guard
from deid_core.ui.safe_text import md

ctx = guard("export")
project = ctx.need_project()
st.title("Export")
counts = status_counts(ctx.engine, project.name)
st.caption(f"{counts['reviewed']} reviewed and {counts['new'] + counts['in_review']} unreviewed notes"
           f" in {project.name}.")

with st.expander("PHI left by automatic de-identification (estimate)", expanded=False):
    estimate = project_estimate(ctx.engine, project.name, project.settings)
    for line in estimate_lines(estimate):
        st.write(line)
    st.caption("Missed PHI = characters in the reviewer's final spans that the model's prediction"
               " (before review) did not cover. Reviewed notes chosen as least confident overstate"
               " the rate; the audit sample (random unreviewed notes) does not.")
    col_a, col_b = st.columns(2)
    target = col_a.number_input("Target: missed PHI characters per 1,000 notes (upper bound)",
                                min_value=0.0, value=float(project.settings.get("missed_phi_target") or 0.0),
                                key="exp_target")
    if col_a.button("Save target", key="exp_target_save"):
        update_project_settings(ctx.engine, project.name, {"missed_phi_target": target},
                                actor=ctx.user.username)
        st.rerun()
    n_audit = col_b.number_input("Audit sample size", min_value=1, value=50, step=10, key="exp_audit_n")
    if col_b.button("Draw an audit sample for review", key="exp_audit_go"):
        drawn = draw_audit_sample(ctx.engine, project.name, int(n_audit), seed=secrets.randbits(32),
                                  actor=ctx.user.username)
        st.success(f"{len(drawn)} random unreviewed notes queued for review (queue order 'audit').")

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
SCOPES = {"corpus": "The whole export (default)", "patient": "Each patient's notes",
          "document": "Each note alone"}
leak_scope = st.selectbox("Mask and leak-check confirmed PHI strings across", list(SCOPES),
                          format_func=SCOPES.get, key="exp_scope")
propagate = st.checkbox("Mask other occurrences of confirmed names, ids and addresses (and their"
                        " variants) within that scope", value=True, key="exp_propagate")
keep_ids = st.checkbox("Keep original note ids, patient keys and source paths (otherwise HMAC"
                       " pseudonyms; recorded in the manifest)", key="exp_keep_ids")
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
        config = ExportConfig(ops, tuple(formats), include_unreviewed=include, leak_scope=leak_scope,
                              propagate=propagate, keep_ids=keep_ids)
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
        if exc.report is not None:
            st.dataframe(leak_rows(exc.report, exc.review_ids), key="exp_leaks", hide_index=True,
                         column_config={"open": st.column_config.LinkColumn("Open in Review",
                                                                             display_text="open")})
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
            "summary": {k: m[k] for k in ("documents", "spans", "formats", "scope", "propagation", "ids")
                        if k in m},
            "message": f"Exported {m['documents']} notes and {m['spans']} spans to {md(result.path)};"
                       f" leak check ({m['leak_check']['scope']} scope): {m['leak_check']['leaks']} leak(s);"
                       f" {len(result.propagated)} other occurrence(s) of confirmed PHI masked.",
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
