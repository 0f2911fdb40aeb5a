"""The package layout is the pipeline: a module never imports from a higher stage.

Every ``import`` in ``deid_core`` is read with ``ast``, including imports
inside functions (a lazy import is still a dependency). Stages, lowest first:

0. the shared ground: ``errors``, ``spans``, ``schemes``, ``corpus``, ``confidence``,
   ``settings`` (one room)
1. ``engine`` (detect)
2. ``evaluation``, ``formats`` (built on detection's tokens and tags)
3. ``synthetic`` (which trains and scores the starter model) and ``store`` (the annotation
   database): peers
4. ``protect`` and ``learning`` (peers: neither imports the other)
5. ``ui``, ``cli``, ``demo``: the top, free to use anything
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "deid_core"

RANKS: dict[str, int] = {
    "": 0, "errors": 0, "spans": 0, "schemes": 0, "corpus": 0, "confidence": 0, "settings": 0,
    "engine": 1,
    "evaluation": 2, "formats": 2,
    "synthetic": 3, "store": 3,
    "protect": 4, "learning": 4,
    "ui": 5, "cli": 5, "demo": 5, "__main__": 5,
}
TOP = 5


def _room(module: str) -> str:
    """``deid_core.engine.model`` -> ``engine``; ``deid_core`` -> ``''``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str) -> bool:
    return (ROOT / f"{name}.py").is_file() or (ROOT / name / "__init__.py").is_file()


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod == "deid_core":  # from deid_core import x: x is the room if it is a module
                out += [(node.lineno, f"deid_core.{a.name}" if _is_module(a.name) else mod)
                        for a in node.names]
            else:
                out.append((node.lineno, mod))
    return [(n, m) for n, m in out if m == "deid_core" or m.startswith("deid_core.")]


def violations() -> list[str]:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        here = _room(_module_name(path))
        assert here in RANKS, f"{path}: room {here!r} has no stage in tests/test_layering.py"
        for line, target in _imports(path):
            there = _room(target)
            assert there in RANKS, f"{path}:{line}: imports unknown room {there!r}"
            if here == there or RANKS[here] == TOP:
                continue
            peer = RANKS[there] == RANKS[here] and RANKS[here] != 0  # the ground is one room
            if RANKS[there] > RANKS[here] or peer:
                found.append(f"{path.relative_to(ROOT.parent)}:{line}: {here or 'deid_core'} "
                             f"(stage {RANKS[here]}) imports {target} (stage {RANKS[there]})")
    return found


def test_no_module_imports_from_a_higher_or_peer_stage() -> None:
    assert violations() == []


def test_the_checker_catches_an_upward_import(tmp_path, monkeypatch) -> None:
    """A planted engine -> store import is reported (the test can fail)."""
    fake = tmp_path / "deid_core"
    (fake / "engine").mkdir(parents=True)
    (fake / "engine" / "__init__.py").write_text("")
    (fake / "engine" / "bad.py").write_text("def f():\n    from deid_core.store import open_store\n")
    (fake / "protect").mkdir()
    (fake / "protect" / "__init__.py").write_text("")
    (fake / "protect" / "peer.py").write_text("from deid_core.learning import active\n")
    (fake / "corpus.py").write_text("import deid_core.engine.tokenize\n")
    monkeypatch.setattr(f"{__name__}.ROOT", fake)
    found = violations()
    assert any("engine/bad.py:2" in v and "deid_core.store" in v for v in found)
    assert any("protect/peer.py:1" in v and "learning" in v for v in found)
    assert any("corpus.py:1" in v and "engine" in v for v in found)


@pytest.mark.parametrize("old", ["model", "tokenize", "export", "batch", "active", "surrogate_map"])
def test_no_module_left_at_an_old_path(old: str) -> None:
    assert not (ROOT / f"{old}.py").exists()
    assert not (ROOT / "store" / "surrogates.py").exists()
