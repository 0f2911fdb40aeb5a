"""Queue: least confident notes first, filters, progress, and "Review next"."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from deid_core.store import repository as repo
from deid_core.ui.queue import (
    STATUS_COLOURS,
    STATUS_ORDER,
    claim_next_note,
    find_rows,
    prediction_summaries,
    progress_frame,
    progress_numbers,
    queue_orders,
    queue_table,
)
from deid_core.ui.resources import guard
from deid_core.ui.safe_text import md

ctx = guard("queue")
project = ctx.need_project()
st.title("Review queue")

counts = repo.status_counts(ctx.engine, project.name)
reviewed, total = progress_numbers(counts)
st.progress(reviewed / total if total else 0.0, text=f"{reviewed} of {total} notes reviewed")

orders = queue_orders(ctx.engine, project)

left, mid, right = st.columns([2, 2, 1])
order = left.selectbox("Order", list(orders), format_func=orders.get, key="queue_order")
statuses = mid.multiselect(
    "Status", ["new", "in_review", "reviewed", "skipped"], default=["new", "in_review"],
    key="queue_status",
)
mine = right.toggle("Only mine", key="queue_mine")
reviewer = ctx.user.username if mine else None
rows = repo.review_queue(
    ctx.engine, project.name, order=order, statuses=statuses or ["new"], assigned_to=reviewer,
    limit=200,
)
table = queue_table(rows, prediction_summaries(ctx.engine, [r.doc_id for r in rows]))
by_reviewer = sorted({str(t["last reviewer"] or t["assigned to"]) for t in table
                      if t["last reviewer"] or t["assigned to"]})
if by_reviewer:
    who = st.multiselect("Reviewer", by_reviewer, key="queue_reviewer")
    if who:
        table = [t for t in table if (t["last reviewer"] or t["assigned to"]) in who]

query = st.text_input("Find a note", key="queue_find", placeholder="note id, database id or patient",
                      help="Keeps the rows whose note id, database id or patient id contains this."
                           " The table's own search (its toolbar) finds them too, but only highlights"
                           " a match: press Enter there to jump to it.")
table = find_rows(table, query)

c1, c2 = st.columns([1, 4])
if c1.button("Review next", type="primary", icon=":material/play_arrow:", key="review_next"):
    layers = claim_next_note(ctx.engine, project, ctx.user.username)
    if layers is None:
        st.info("Nothing left to review.")
    else:
        st.session_state["current_doc"] = layers.doc_id
        st.switch_page("pages/review.py")
c2.caption(
    "Review next takes the next unassigned note (by the active-learning strategy when the queue"
    " was scored, else least confident first) and assigns it to you, so two reviewers never get"
    " the same note."
)

if table:
    frame = pd.DataFrame(table)
    event = st.dataframe(
        frame, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
        key="queue_table", placeholder="",
        column_config={
            "log P / span": st.column_config.NumberColumn(
                help="Log-probability per predicted span (lower = less sure; the default order)"),
            "log P": st.column_config.NumberColumn(help="Document log-probability (lower = less sure)"),
            "log P / token": st.column_config.NumberColumn(help="Length-normalised log-probability"),
        },
    )
    picked = event.selection.rows if event is not None else []
    if picked:
        doc_id = int(frame.iloc[picked[0]]["id"])
        if st.button(f"Open note {md(frame.iloc[picked[0]]['note'])}", key="open_picked"):
            st.session_state["current_doc"] = doc_id
            st.switch_page("pages/review.py")
else:
    st.info("No notes match these filters.")

with st.expander("Queue progress by status"):
    chart = pd.DataFrame(progress_frame(counts))
    colour = alt.Color("status:N", scale=alt.Scale(domain=list(STATUS_ORDER), range=list(STATUS_COLOURS)),
                       legend=alt.Legend(orient="bottom", title=None))
    y = alt.Y("status:N", sort=list(STATUS_ORDER), title=None, axis=alt.Axis(labelLimit=200))
    bars = alt.Chart(chart).mark_bar().encode(
        x=alt.X("notes:Q", title="notes", axis=alt.Axis(format="d", tickMinStep=1)), y=y, color=colour,
        tooltip=["status", "notes"])
    labels = alt.Chart(chart).mark_text(align="left", dx=4).encode(
        x="notes:Q", y=y, text=alt.Text("notes:Q", format="d"))
    # A fixed step per bar: with a fixed total height the axis dropped labels that did not fit.
    st.altair_chart((bars + labels).properties(height=alt.Step(28)), width="stretch")
