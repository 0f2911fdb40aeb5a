"""Training with sklearn-crfsuite, and the exact weights of a trained CRFsuite model.

``CRF.state_features_`` is parsed from a text dump that prints weights with
six decimals. Summed over ~40 attributes per token, that rounding moves a
score by up to ~1e-5, enough to flip a near tie in Viterbi and to miss the
1e-5 marginal tolerance. So the decoder reads the float64 weights straight
from the binary model file (CRFsuite's ``crf1d_model.c`` layout: a 48-byte
header, CQDB string tables for labels and attributes, and a ``FEAT`` chunk of
20-byte ``(type, src, dst, weight)`` records, all little-endian).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pycrfsuite
import scipy.sparse as sp
import sklearn_crfsuite

from deid_core.errors import ModelError

ProgressFn = Callable[[str, float], None]


@dataclass(frozen=True)
class CRFParams:
    """CRFsuite hyper-parameters. Defaults come from ``bench/engine_hparam_search.py``."""

    algorithm: str = "lbfgs"
    c1: float = 0.05
    c2: float = 0.01
    max_iterations: int = 50
    min_freq: int = 1
    all_possible_transitions: bool = True
    epsilon: float = 1e-4

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> CRFParams:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in known})

    def estimator(self, model_path: str | Path, trainer_cls: type | None = None) -> sklearn_crfsuite.CRF:
        kwargs: dict[str, Any] = {
            "algorithm": self.algorithm,
            "max_iterations": self.max_iterations,
            "min_freq": self.min_freq,
            "all_possible_transitions": self.all_possible_transitions,
            "model_filename": str(model_path),
            "trainer_cls": trainer_cls,
        }
        if self.algorithm in ("lbfgs",):
            kwargs.update(c1=self.c1, c2=self.c2, epsilon=self.epsilon)
        elif self.algorithm == "l2sgd":
            kwargs.update(c2=self.c2)
        return sklearn_crfsuite.CRF(**kwargs)


class _QuietTrainer(pycrfsuite.Trainer):
    """Feeds CRFsuite's log to the parser and reports iterations, printing nothing."""

    progress_fn: ProgressFn | None = None
    max_iterations: int = 100

    def message(self, message: str) -> None:  # type: ignore[override]
        event = self.logparser.feed(message)
        if event == "iteration" and self.progress_fn is not None:
            num = int(self.logparser.last_iteration.get("num", 0))
            self.progress_fn(f"CRF iteration {num}", min(1.0, num / max(1, self.max_iterations)))


def train_crf(
    xs: Sequence[Sequence[Sequence[str]]],
    ys: Sequence[Sequence[str]],
    model_path: str | Path,
    params: CRFParams | None = None,
    progress: ProgressFn | None = None,
) -> sklearn_crfsuite.CRF:
    """Train on attribute-string sequences; the model file is written to ``model_path``."""
    train_crf_groups(xs, ys, None, [(-1, model_path)], params, progress)
    return open_crf(model_path)


def train_crf_groups(
    xs: Sequence[Sequence[Sequence[str]]],
    ys: Sequence[Sequence[str]],
    groups: Sequence[int] | None,
    runs: Sequence[tuple[int, str | Path]],
    params: CRFParams | None = None,
    progress: ProgressFn | None = None,
) -> None:
    """Several models from one crfsuite data set: one per ``(holdout, model_path)`` run.

    Sequence ``i`` belongs to group ``groups[i]`` (0 when ``groups`` is None);
    a run with holdout ``g >= 1`` trains on every sequence outside group
    ``g`` (crfsuite's holdout group, also scored after each pass), -1 on all
    of them. Handing the sequences to crfsuite costs about a third of a
    short training, so a k-fold round pays it once instead of once per fold.
    """
    params = params or CRFParams()
    trainer_cls = type(
        "ProgressTrainer",
        (_QuietTrainer,),
        {"progress_fn": None, "max_iterations": params.max_iterations},
    )
    trainer = params.estimator(runs[0][1], trainer_cls)._get_trainer()
    for i, (x, y) in enumerate(zip(xs, ys)):
        trainer.append(x, y, int(groups[i]) if groups is not None else 0)
    for k, (holdout, path) in enumerate(runs):
        if progress is not None:
            def report(message: str, fraction: float, k: int = k) -> None:
                progress(message, (k + fraction) / len(runs))  # type: ignore[misc]

            trainer.progress_fn = report
        trainer.train(str(path), holdout=holdout)


def open_crf(model_path: str | Path) -> sklearn_crfsuite.CRF:
    """An sklearn-crfsuite estimator over an existing model file (for ``predict`` checks)."""
    return sklearn_crfsuite.CRF(model_filename=str(model_path))


# -- exact weights from the binary model file -----------------------------------


@dataclass(frozen=True)
class CRFWeights:
    """Model weights indexed by CRFsuite's own label and attribute ids."""

    labels: list[str]  # label id -> name (the order of ``crf.classes_``)
    attributes: list[str]  # attribute id -> string
    state: sp.csr_matrix  # (n_attributes, n_labels)
    transitions: np.ndarray  # (n_labels, n_labels): from row to column


_HEADER = struct.Struct("<4sI4sIIIIIIIII")
_FEATURE = np.dtype([("type", "<u4"), ("src", "<u4"), ("dst", "<u4"), ("weight", "<f8")])


def _read_cqdb(buf: bytes, offset: int, count: int, origin: str) -> list[str]:
    """Id -> string table of a CQDB chunk (the backward array of ``cqdb.c``)."""
    magic, _size, _flag, _order, bwd_size, bwd_offset = struct.unpack_from("<4sIIIII", buf, offset)
    if magic != b"CQDB":
        raise ModelError(f"{origin}: string table at {offset} is not a CQDB chunk")
    if bwd_size < count:
        raise ModelError(f"{origin}: string table holds {bwd_size} ids, expected {count}")
    refs = np.frombuffer(buf, dtype="<u4", count=count, offset=offset + bwd_offset)
    out = []
    for i, ref in enumerate(refs.tolist()):
        rid, ksize = struct.unpack_from("<iI", buf, offset + ref)
        if rid != i:
            raise ModelError(f"{origin}: string table entry {i} has id {rid}")
        start = offset + ref + 8
        out.append(buf[start : start + ksize - 1].decode("utf-8", "replace"))
    return out


def read_weights(model_path: str | Path) -> CRFWeights:
    """Parse a CRFsuite 1st-order model file into float64 weight arrays."""
    path = Path(model_path)
    try:
        buf = path.read_bytes()
    except OSError as exc:
        raise ModelError(f"{path}: cannot read CRF model file ({exc.strerror})") from exc
    if len(buf) < _HEADER.size:
        raise ModelError(f"{path}: CRF model file is truncated")
    (magic, size, mtype, _version, _n_feat, n_labels, n_attrs, off_feat, off_labels,
     off_attrs, _off_lrefs, _off_arefs) = _HEADER.unpack_from(buf, 0)
    if magic != b"lCRF" or mtype != b"FOMC":
        raise ModelError(f"{path}: not a CRFsuite first-order model file")
    if size != len(buf):
        raise ModelError(f"{path}: CRF model file is truncated ({len(buf)} of {size} bytes)")
    # The header's feature count is left at 0 by CRFsuite's writer; the chunk has the real one.
    chunk, csize, n_feat = struct.unpack_from("<4sII", buf, off_feat)
    if chunk != b"FEAT" or csize != 12 + _FEATURE.itemsize * n_feat:
        raise ModelError(f"{path}: CRF model feature table is damaged")
    feats = np.frombuffer(buf, dtype=_FEATURE, count=n_feat, offset=off_feat + 12)
    labels = _read_cqdb(buf, off_labels, n_labels, str(path))
    attributes = _read_cqdb(buf, off_attrs, n_attrs, str(path))
    is_state = feats["type"] == 0
    st = feats[is_state]
    state = sp.csr_matrix(
        (st["weight"].astype(np.float64), (st["src"].astype(np.int64), st["dst"].astype(np.int64))),
        shape=(n_attrs, n_labels),
    )
    tr = feats[feats["type"] == 1]
    transitions = np.zeros((n_labels, n_labels), dtype=np.float64)
    transitions[tr["src"].astype(np.int64), tr["dst"].astype(np.int64)] = tr["weight"]
    return CRFWeights(labels, attributes, state, transitions)


def fold_domain_weights(weights: CRFWeights, prefix: str) -> CRFWeights:
    """Weights as an in-domain note sees them: each general weight plus its in-domain copy's.

    A model trained with feature augmentation scores a target-domain token by
    the sum of both copies of every attribute. Folding the copies once, when
    the model is loaded, lets the decoder stay unaware of augmentation and
    makes every note tagged by the model use the in-domain copy: the project's
    notes are the model's target domain.
    """
    names: list[str] = []
    index: dict[str, int] = {}
    rows = np.empty(len(weights.attributes), dtype=np.int64)
    for pass_prefixed in (False, True):
        for i, attr in enumerate(weights.attributes):
            if attr.startswith(prefix) != pass_prefixed:
                continue
            base = attr[len(prefix):] if pass_prefixed else attr
            j = index.get(base)
            if j is None:
                j = index[base] = len(names)
                names.append(base)
            rows[i] = j
    n_old = len(weights.attributes)
    fold = sp.csr_matrix(
        (np.ones(n_old), (rows, np.arange(n_old))), shape=(len(names), n_old)
    )
    state = sp.csr_matrix(fold @ weights.state)
    state.sort_indices()
    return CRFWeights(list(weights.labels), names, state, weights.transitions)
