"""A store where reviewers deleted every span of one rule: for the Model page's rule tests
(AppTest and the real browser)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

FIXTURE_MODEL = Path(__file__).parent / "fixtures" / "model_v1_en"
PASSWORD = "correct horse battery"
PROJECT = "p"


def seed(url: str) -> Any:
    """Twelve notes with two dashed phone numbers each; rita deleted every phone span the
    fixture model's ``phone_dashed`` rule predicted in eleven of them (22 decisions, none kept)."""
    from deid_core.spans import Document
    from deid_core.store import repository as repo
    from deid_core.store.engine import open_store
    from deid_core.store.predict import predict_queue
    from deid_core.store.users import create_user

    engine = open_store(url)
    create_user(engine, "ada", PASSWORD, role="admin")
    create_user(engine, "rita", PASSWORD, role="reviewer")
    repo.create_project(engine, PROJECT, lang="en", scheme="i2b2_2014")
    notes = [Document(f"n{i:02d}", f"Call back at 617-555-{1000 + i} or 508-555-{2000 + i}"
                                   f" on 03/{10 + i}/2021.") for i in range(12)]
    repo.import_documents(engine, PROJECT, notes)
    repo.register_model_version(engine, PROJECT, version="v1", artifact_path=str(FIXTURE_MODEL),
                                activate=True)
    predict_queue(engine, PROJECT)
    for row in repo.review_queue(engine, PROJECT, order="id", limit=11):
        layers = repo.get_document(engine, row.doc_id)
        assert layers.prediction is not None
        final = [s for s in layers.prediction.spans if s.source != "rule:phone_dashed"]
        repo.save_review(engine, row.doc_id, "rita", final, layers.version)
    return engine
