"""Import (admin): create a project, upload notes in any supported format, choose annotations."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import streamlit as st

from deid_core.errors import DeidError
from deid_core.schemes import BUILTIN_SCHEMES
from deid_core.store import repository as repo
from deid_core.store.importers import FORMATS, import_paths
from deid_core.ui.importing import format_mismatch
from deid_core.ui.job_view import show_job
from deid_core.ui.jobs import get_job, start_job
from deid_core.ui.learning import install_starter, predict_with_active, starter_applies
from deid_core.ui.resources import guard
from deid_core.ui.safe_text import md

log = logging.getLogger("deid_core.ui.import")
ctx = guard("import")
st.title("Import")

with st.expander("Create a project", expanded=ctx.project is None):
    with st.form("create_project"):
        name = st.text_input("Name", key="new_project")
        lang = st.selectbox("Language", ["en", "es"], key="new_project_lang")
        scheme = st.selectbox("Label scheme", list(BUILTIN_SCHEMES), key="new_project_scheme")
        if st.form_submit_button("Create"):
            try:
                repo.create_project(ctx.engine, name.strip(), lang=lang, scheme=scheme,
                                    actor=ctx.user.username)
            except DeidError as exc:
                st.error(str(exc))
            else:
                st.session_state["project"] = name.strip()
                st.session_state.pop("project_select", None)  # let the sidebar follow
                if starter_applies(lang, scheme):
                    # Start from the bundled starter model (built on first use, minutes).
                    engine, new, actor = ctx.engine, name.strip(), ctx.user.username
                    start_job(f"starter:{new}", "Installing the starter model",
                              lambda progress: install_starter(engine, new, actor, progress=progress))
                st.rerun()

project = ctx.need_project()


@st.fragment(run_every=2.0)
def starter_status() -> None:
    snap = show_job(get_job(f"starter:{project.name}"), running="Starter model",
                    failed="The starter model could not be installed")
    if snap is not None:
        st.success("The starter model is this project's active model: imported notes are"
                   " pre-annotated with it.")


starter_status()
st.write(f"Importing into **{md(project.name)}** ({project.lang}, {md(project.scheme)}).")
HELP = {
    "jsonl": "JSON Lines in the shared span format (.jsonl)",
    "txt": "Plain text notes (.txt files or a .zip of them)",
    "csv": "A CSV with one note per row; pick the columns below",
    "brat": "BRAT standoff: select the .txt and .ann files together",
    "i2b2": "i2b2 2014 XML files (.xml)",
}
fmt = st.selectbox("Format", list(FORMATS), format_func=lambda f: f"{f}: {HELP.get(f, '')}", key="imp_fmt")
# A new key after each import empties the uploader: the next import starts from no files.
round_no = int(st.session_state.get("import_round", 0))
files = st.file_uploader("Files", accept_multiple_files=True, key=f"imp_files_{round_no}")
report = st.session_state.get("import_report")
if report:
    st.success(report["message"])
    if report["duplicates"]:
        st.warning(f"Skipped {len(report['duplicates'])} duplicate note(s) already in the project.")
        st.dataframe(report["duplicates"], hide_index=True, placeholder="")
spanless = fmt in ("txt", "csv")
annotations = st.radio(
    "Existing annotations come in as",
    ["none", "gold", "predictions"], horizontal=True, disabled=spanless, key="imp_ann",
    format_func={"none": "ignored", "gold": "reviewed (gold)", "predictions": "predictions to review"}.get,
)
text_col, id_col, patient_col = "text", None, None
if fmt == "csv":
    c1, c2, c3 = st.columns(3)
    text_col = c1.text_input("Text column", "text", key="imp_text_col")
    id_col = c2.text_input("Id column (optional)", "", key="imp_id_col") or None
    patient_col = c3.text_input("Patient column (optional)", "", key="imp_patient_col") or None

if st.button("Import", type="primary", disabled=not files, key="imp_go"):
    st.session_state["import_report"] = None
    mismatch = format_mismatch(fmt, [(f.name, f.getvalue()) for f in files])
    if mismatch:
        st.error(f"Nothing was imported: {mismatch}")
        st.stop()
    bar = st.progress(0.0, text="Reading files")
    with tempfile.TemporaryDirectory(prefix="deid-import-") as tmp:
        paths = []
        for f in files:
            target = Path(tmp) / Path(f.name).name
            target.write_bytes(f.getvalue())
            paths.append(target)
        if fmt == "brat":
            paths = [Path(tmp)]  # .txt/.ann pairs: the folder is the unit
        try:
            result = import_paths(
                ctx.engine, project.name, paths, fmt=fmt,
                annotations="none" if spanless else annotations,
                text_column=text_col, id_column=id_col, patient_column=patient_col,
                actor=ctx.user.username,
                progress=lambda message, fraction: bar.progress(min(fraction, 1.0), text=message),
            )
        except DeidError as exc:
            bar.empty()
            st.error(f"Nothing was imported: {md(str(exc).replace(tmp + '/', ''))}")
        except Exception as exc:  # noqa: BLE001 - shown by type only: a message could quote a note
            bar.empty()
            log.error("import failed with %s", type(exc).__name__)
            st.error(f"Nothing was imported: unexpected {type(exc).__name__} (see the server log).")
        else:
            starter_job = get_job(f"starter:{project.name}")
            if result.n_imported and not (starter_job is not None and starter_job.running):
                # Pre-annotate the new notes with the active model (the starter at first).
                engine, name, who = ctx.engine, project.name, ctx.user.username
                start_job(f"predict:{project.id}", "Pre-annotating the imported notes",
                          lambda progress: predict_with_active(engine, name, who, progress=progress))
            st.session_state["import_report"] = {
                "message": f"Imported {result.n_imported} notes with {result.n_spans} spans"
                           f" (batch {result.batch_id}).",
                "duplicates": [{"note": d.external_id, "same text as": d.existing_external_id}
                               for d in result.duplicates],
            }
            st.session_state["import_round"] = round_no + 1
            st.rerun()
