"""Model page logic: retrain from reviewed notes, register the decision, order the queue.

``retrain_project`` is what "Retrain now" runs in the background: it trains a
candidate on the reviewed notes (imported gold included: it is reviewed too),
lets :func:`deid_core.learning.registry.retrain` compare it with the active model on
notes neither trained on, stores the candidate as a model version (active only
when accepted), records the decision as an audit event, and re-predicts the
queue with the new model when it was activated.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from deid_core.engine.recall_bias import RECALL, bias_or_none, training_metadata
from deid_core.errors import DeidError
from deid_core.store import repository as repo
from deid_core.store.audit import record_event
from deid_core.store.authz import Actor, Principal, check
from deid_core.store.engine import write_session

Progress = Callable[[str, float], None]

#: Iterations for app retrains: enough for a usable model, quick enough for k-fold comparison.
APP_MAX_ITERATIONS = 100


def models_dir(project: str, active_path: str | None = None) -> Path:
    """Where new model versions go: ``DEID_MODEL_DIR``, beside the active model, or the data dir."""
    explicit = os.environ.get("DEID_MODEL_DIR")
    if explicit:
        return Path(explicit) / project
    if active_path:
        return Path(active_path).parent
    from deid_core.ui.exporting import data_dir

    return data_dir() / "models" / project


def _scale(progress: Progress | None, lo: float, hi: float) -> Progress:
    def inner(message: str, fraction: float) -> None:
        if progress is not None:
            progress(message, lo + (hi - lo) * max(0.0, min(1.0, fraction)))

    return inner


def retrain_project(
    engine: Engine,
    project: str,
    actor: Actor,
    *,
    max_iterations: int | None = None,
    full: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Train, compare, register, maybe activate and re-predict; returns a summary (no text).

    Rounds use the policy's fast crfsuite settings (``loop_algorithm``);
    ``full=True`` is the slower L-BFGS retrain on the same data (``policy.full()``),
    run on demand or, every ``full_every`` reviewed notes, by :func:`maybe_retrain`.
    """
    from deid_core.engine.model import DeidModel, TrainConfig
    from deid_core.learning.registry import RetrainPolicy
    from deid_core.learning.retrain import retrain_round
    from deid_core.schemes import load_scheme
    from deid_core.ui.queue import predict_unreviewed

    info = repo.get_project(engine, project)
    reviewed = list(repo.reviewed_corpus(engine, project))
    if len(reviewed) < 2:
        raise DeidError("retraining needs at least 2 reviewed notes")
    policy = RetrainPolicy.from_settings(info.settings)
    if full:
        policy = policy.full()
    if max_iterations is not None:
        policy = replace(policy, loop_iterations=max_iterations)
    say = _scale(progress, 0.0, 0.85)

    active = repo.active_model_version(engine, project)
    active_model = None
    if active is not None and Path(active.artifact_path).is_dir():
        active_model = DeidModel.load(active.artifact_path)
    active_ids = set(active.metrics.get("train_ids") or []) if active is not None else set()
    bias = float(info.settings.get("bias", 0.0))
    # A project at its model's recall bias follows it: each model is compared at its own.
    compare_at: float | str = RECALL if follows_recall_bias(bias, active_model and active_model.metadata) else bias
    # The same round as the simulation: the active model's training corpus plus
    # every reviewed note, weighted up, judged on reviewed notes it did not see.
    result = retrain_round(
        reviewed, active_model=active_model, policy=policy, lang=info.lang,
        scheme=load_scheme(info.scheme) if active_model is None else None,
        base_config=TrainConfig(max_iterations=APP_MAX_ITERATIONS) if active_model is None else None,
        active_train_ids=active_ids, progress=say, bias=compare_at,
    )
    config = result.model.config
    target = models_dir(project, active.artifact_path if active else None)
    path = result.model.save(target / result.model.version)
    metrics = dict(result.metrics)
    metrics["train_ids"] = list(result.train_ids)
    accepted = result.decision.accepted
    mv = repo.register_model_version(
        engine, project, version=result.model.version, artifact_path=str(path),
        n_train_docs=len(result.train_ids), hyperparams=config.to_dict(), metrics=metrics,
        parent=active.version if active is not None else None, activate=accepted, actor=actor,
    )
    with write_session(engine) as s:
        record_event(s, check(s, actor, "admin", "record a retrain"), "model.retrain", "model_version", mv.id,
                     project_id=info.id,
                     after={**result.decision.to_audit(),
                            "adaptation": metrics["adaptation"],
                            "reviewed_weight": metrics["reviewed_weight"],
                            "n_base_docs": metrics["n_base_docs"],
                            "train_config": metrics["train_config"]})
    summary: dict[str, Any] = {
        "version": mv.version, "accepted": accepted, "reason": result.decision.reason, "full": full,
        "n_train_docs": len(result.train_ids), "seconds": round(result.seconds, 1),
        "repredicted": 0,
    }
    # Reviewer feedback on the rules: each round demotes the rules whose precision on
    # reviewed notes fell below the project's threshold (audited; undone on the Model page).
    from deid_core.store.rule_feedback import apply_rule_policy

    demoted = apply_rule_policy(engine, project, actor=actor)
    summary["demoted_rules"] = demoted
    if accepted:
        moved = follow_recall_bias(engine, project, bias, active_model and active_model.metadata,
                                   result.model.metadata, actor)
        if moved != bias:
            summary["bias_before"] = bias
        bias = summary["bias"] = moved
        summary["repredicted"] = predict_unreviewed(
            engine, project, result.model, model_version=mv.version, model_version_id=mv.id,
            bias=bias, progress=_scale(progress, 0.85, 1.0), actor=actor,
        )
    elif demoted:
        summary["repredicted"] = predict_with_active(engine, project, actor,
                                                     progress=_scale(progress, 0.85, 1.0))
    if progress is not None:
        progress(result.decision.reason, 1.0)
    return summary


def follows_recall_bias(bias: float, metadata: Mapping[str, Any] | None) -> bool:
    """Whether a project at ``bias`` uses the recall bias a model's ``metadata`` records (new projects start there)."""
    from deid_core.ui.bias import recall_bias_on_slider

    recall_bias = recall_bias_on_slider(metadata) if metadata is not None else None
    return recall_bias is not None and recall_bias == bias


def follow_recall_bias(
    engine: Engine, project: str, bias: float, old: Mapping[str, Any] | None, new: Mapping[str, Any],
    actor: Actor,
) -> float:
    """The project's bias once model ``new`` replaces ``old`` (their metadata): from ``old``'s recall bias to ``new``'s.

    Each model version records the bias that reaches the recall target on the
    same dev notes (``learning.retrain.RecallBiasChoice``); a fast candidate
    is sharper than the L-BFGS starter, so keeping the starter's number would
    quietly lower recall (docs/active.md, session 12). The move is audited as
    a settings change by ``actor``. A bias the admin chose is left alone.
    """
    from deid_core.ui.bias import recall_bias_on_slider

    target = recall_bias_on_slider(new)
    if target is None or target == bias or not follows_recall_bias(bias, old):
        return bias
    return float(repo.update_project_settings(engine, project, {"bias": target}, actor=actor).settings["bias"])


def compared_bias(metrics: dict[str, Any] | None) -> float | None:
    """The Versions table's "at bias": the O-label bias a version's held-out figures were measured at.

    A project that follows its model's recall bias compares each model at its
    own, so the candidate's is the one its figures belong to.
    """
    m = metrics or {}
    own = (m.get("compared_at_biases") or {}).get("candidate")
    value = own if own is not None else m.get("compared_at_bias")
    return bias_or_none(value)


def starter_notes(metrics: dict[str, Any] | None) -> str | None:
    """The Versions table's "starter notes": how much of the starter's corpus a version trained on.

    A fast round trains on a fixed sample of it (``RetrainPolicy.loop_base_chars``),
    so "348 of 700" tells a reviewer why two versions differ there.
    """
    used = (metrics or {}).get("n_base_docs")
    total = (metrics or {}).get("n_base_corpus")
    if used is None:
        return None
    return f"{used} of {total}" if total not in (None, used) else str(used)


def starter_applies(lang: str, scheme: str) -> bool:
    """Whether a project in ``lang`` with ``scheme`` can start from a bundled starter model."""
    from deid_core.synthetic.starter import STARTER_LANGS, recipe

    return lang in STARTER_LANGS and recipe(lang).scheme == scheme


def install_starter(
    engine: Engine, project: str, actor: Actor, *, progress: Progress | None = None,
    use_recall_bias: bool = True,
) -> dict[str, Any]:
    """Give a project the starter model as its first, active version and pre-annotate its queue.

    With ``use_recall_bias`` the project's O-label bias becomes the starter's
    recorded recall bias (audited as a settings change by ``actor``): recall
    comes first, and on hand-written notes nobody tuned on (docs/engine.md,
    set 13) it gains 0.048 character recall for 0.010 precision over bias 0.
    Later retrains' fast models have their scores fitted to a likelihood
    scale as the L-BFGS starter's are (``deid_core.engine.calibration``), and
    each records its own recall bias; the project follows it from version to
    version (:func:`follow_recall_bias`) until an admin picks another bias.

    The starter is built (first use) or taken from its cache, then copied into
    the project's model directory: the cache is replaced when the code
    changes, and a registered version must keep its files. A project that
    already has an active model keeps it.
    """
    import shutil

    from deid_core.engine.model import DeidModel
    from deid_core.synthetic.starter import ensure_starter
    from deid_core.ui.bias import model_recall_bias
    from deid_core.ui.queue import predict_unreviewed

    info = repo.get_project(engine, project)
    if not starter_applies(info.lang, info.scheme):
        raise DeidError(f"no starter model for {info.lang!r} notes in scheme {info.scheme!r}")
    if repo.active_model_version(engine, project) is not None:
        raise DeidError(f"project {project!r} already has an active model")
    source = ensure_starter(info.lang, progress=_scale(progress, 0.0, 0.8))
    target = models_dir(project) / source.name
    if not target.is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(source, tmp)
        tmp.rename(target)
    model = DeidModel.load(target)
    mv = repo.register_model_version(
        engine, project, version=model.version, artifact_path=str(target),
        n_train_docs=int(model.metadata.get("documents", 0)), hyperparams=model.config.to_dict(),
        metrics={"note": "starter model trained on synthetic notes", "starter": True,
                 "recall_bias": model.metadata.get("recall_bias")},
        activate=True, actor=actor,
    )
    bias = float(info.settings.get("bias", 0.0))
    recall_bias = model_recall_bias(model)
    if use_recall_bias and recall_bias is not None and recall_bias != bias:
        bias = float(repo.update_project_settings(engine, project, {"bias": recall_bias}, actor=actor)
                     .settings["bias"])
    n = predict_unreviewed(engine, project, model, model_version=mv.version, model_version_id=mv.id,
                           bias=bias, progress=_scale(progress, 0.8, 1.0), actor=actor)
    if progress is not None:
        progress("starter model active", 1.0)
    return {"version": mv.version, "predicted": n, "bias": bias}


def predict_with_active(
    engine: Engine, project: str, actor: Actor, *, progress: Progress | None = None
) -> int:
    """Pre-annotate the unreviewed notes with the active model at the project's bias (0 if none)."""
    from deid_core.engine.model import DeidModel
    from deid_core.ui.queue import predict_unreviewed

    mv = repo.active_model_version(engine, project)
    if mv is None or not Path(mv.artifact_path).is_dir():
        return 0
    bias = float(repo.get_project(engine, project).settings.get("bias", 0.0))
    return predict_unreviewed(engine, project, DeidModel.load(mv.artifact_path), model_version=mv.version,
                              model_version_id=mv.id, bias=bias, progress=progress, actor=actor)


def activate_and_repredict(
    engine: Engine, project: str, version: str, actor: str, *, progress: Progress | None = None
) -> int:
    """Activate (or roll back to) a version and re-predict the queue with it."""
    from deid_core.engine.model import DeidModel
    from deid_core.ui.queue import predict_unreviewed

    before = repo.active_model_version(engine, project)
    old = (training_metadata(before.artifact_path)
           if before is not None and Path(before.artifact_path).is_dir() else None)
    mv = repo.activate_model_version(engine, project, version, actor=actor)
    if not Path(mv.artifact_path).is_dir():
        raise DeidError(f"model version {version!r} has no directory at its artifact path")
    model = DeidModel.load(mv.artifact_path)
    bias = float(repo.get_project(engine, project).settings.get("bias", 0.0))
    bias = follow_recall_bias(engine, project, bias, old, model.metadata, actor)
    return predict_unreviewed(engine, project, model, model_version=mv.version,
                              model_version_id=mv.id, bias=bias, progress=progress, actor=actor)


def order_queue_by_strategy(
    engine: Engine, project: str, strategy: str, actor: str, *, progress: Progress | None = None
) -> int:
    """Score every unreviewed note with the strategy and store it as the queue order."""
    from deid_core.engine.model import DeidModel
    from deid_core.learning.active import get_strategy, rank_pool

    info = get_strategy(strategy)
    mv = repo.active_model_version(engine, project)
    model = None
    if info.scorer is not None:
        if mv is None or not Path(mv.artifact_path).is_dir():
            raise DeidError(f"strategy {strategy!r} needs an active model")
        from deid_core.store.rule_feedback import with_project_rules

        model = with_project_rules(DeidModel.load(mv.artifact_path), repo.get_project(engine, project).settings)
    pool = list(repo.unreviewed_documents(engine, project))
    ids = {doc.id: doc_id for doc_id, doc in pool}
    docs = [doc for _doc_id, doc in pool]
    preds = None
    if model is not None:
        preds = []
        for k, doc in enumerate(docs):
            preds.append(model.predict(doc, bias=0.0))
            if progress is not None and k % 10 == 0:
                progress(f"scoring {k + 1} of {len(docs)} notes", 0.9 * (k + 1) / max(1, len(docs)))
    scores = rank_pool(strategy, docs, model=model, predictions=preds)
    n = repo.set_queue_scores(engine, project, strategy, {ids[k]: v for k, v in scores.items()},
                              model_version=mv.version if mv else None, actor=actor)
    repo.update_project_settings(engine, project, {"strategy": strategy}, actor=actor)
    if progress is not None:
        progress(f"ordered {n} notes by {strategy}", 1.0)
    return n


def policy_actor(triggered_by: str) -> Principal:
    """Who an automatic retrain acts as: the project's retrain policy, not the reviewer.

    A reviewer's save triggers it, but registering and activating a model is an
    admin's right; the policy an admin set is what decides, so the round runs as
    a trusted principal whose audit name still says whose save started it.
    """
    return Principal(f"retrain policy (after a save by {triggered_by})"[:100])


def maybe_retrain(engine: Engine, project: str, actor: str) -> bool:
    """Start a background retrain when the project's policy says it is due (after a save).

    ``actor`` is the user whose save this follows; the round itself runs as
    ``policy_actor(actor)``.
    """
    from deid_core.learning.registry import full_retrain_due, retrain_due
    from deid_core.ui.jobs import get_job, start_job

    # Counted from the latest candidate, accepted or rejected, so a rejected
    # candidate does not trigger a retrain at every following save.
    if not retrain_due(engine, project):
        return False
    info = repo.get_project(engine, project)
    name = f"model:{info.id}"
    job = get_job(name)
    if job is not None and job.running:
        return False
    # Every ``full_every`` reviewed notes the round trains with L-BFGS instead:
    # the fast candidate's small accuracy cost is not left standing for long.
    full = full_retrain_due(engine, project)
    start_job(name, "Automatic full retraining (L-BFGS)" if full else "Automatic retraining",
              lambda progress: retrain_project(engine, project, policy_actor(actor), full=full,
                                               progress=progress))
    return True
