"""predict-queue: the active model pre-annotates unreviewed notes; log-probabilities order the queue."""

from __future__ import annotations

from pathlib import Path

import pytest
from people import add_users

from deid_core.cli import main
from deid_core.corpus import write_jsonl
from deid_core.engine.model import DeidModel, TrainConfig, train_model
from deid_core.errors import StoreError
from deid_core.store import repository as repo
from deid_core.store.predict import predict_queue
from deid_core.synthetic import generate_notes


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = train_model(generate_notes(16, seed=1), lang="en",
                        config=TrainConfig(max_iterations=15))
    return model.save(tmp_path_factory.mktemp("model") / "m")


def test_predict_queue_library(store, model_dir) -> None:  # type: ignore[no-untyped-def]
    add_users(store, reviewers=("alice",))
    repo.create_project(store, "p", settings={"bias": 0.5})
    notes = generate_notes(8, seed=7)
    repo.import_documents(store, "p", [d.with_spans([]) for d in notes])
    with pytest.raises(StoreError, match="no active model"):
        predict_queue(store, "p")
    model = DeidModel.load(model_dir)
    repo.register_model_version(store, "p", version=model.version, artifact_path=str(model_dir),
                                activate=True)
    first = repo.claim_next(store, "p", "alice")  # in review: still predicted
    assert first is not None
    seen: list[float] = []
    result = predict_queue(store, "p", progress=lambda _m, f: seen.append(f))
    assert (result.n_predicted, result.n_skipped, result.bias) == (8, 0, 0.5)
    assert seen[-1] == 1.0
    queue = repo.review_queue(store, "p", limit=20)
    assert len(queue) == 8 and all(r.logprob is not None for r in queue)
    # least confident first, by default per predicted span (docs/active.md "Queue order")
    assert [r.logprob_span for r in queue] == sorted(r.logprob_span for r in queue)
    raw = repo.review_queue(store, "p", order="logprob", limit=20)
    assert [r.logprob for r in raw] == sorted(r.logprob for r in raw)
    by_id = {d.id: d for d in notes}
    for row in queue[:3]:
        layer = repo.get_document(store, row.doc_id).prediction
        assert layer is not None and layer.model_version == model.version and layer.bias == 0.5
        expected = model.predict(by_id[row.external_id].with_spans([]), 0.5)
        assert [s.key for s in layer.spans] == [s.key for s in expected.spans]
        assert row.logprob_span == pytest.approx(expected.logprob / (1 + len(expected.spans)))
        assert layer.logprob == pytest.approx(expected.logprob)
        assert layer.logprob_norm == pytest.approx(expected.logprob_per_token)
        assert layer.n_tokens == expected.n_tokens
    again = predict_queue(store, "p")
    assert (again.n_predicted, again.n_skipped) == (0, 8)
    assert predict_queue(store, "p", redo=True, limit=3).n_predicted == 3


def test_predict_queue_cli(db_url, model_dir, capsys) -> None:  # type: ignore[no-untyped-def]
    db = ["--db", db_url]
    assert main(["project", "create", "c", *db]) == 0
    src = Path(model_dir).parent / "notes.jsonl"
    write_jsonl(src, generate_notes(5, seed=9))
    assert main(["import", "--project", "c", "--format", "jsonl", "--quiet", str(src), *db]) == 0
    assert main(["predict-queue", "--project", "c", "--quiet", *db]) == 1
    assert "no active model" in capsys.readouterr().err
    assert main(["models", "register", str(model_dir), "--project", "c", "--activate", *db]) == 0
    assert main(["models", "list", "--project", "c", *db]) == 0
    out = capsys.readouterr().out
    assert "(active)" in out and "* " in out
    assert main(["predict-queue", "--project", "c", "--quiet", *db]) == 0
    out = capsys.readouterr().out
    assert "predicted 5 notes" in out and "skipped 0" in out
