"""Label schemes are data: label -> category, HIPAA flag, display colour.

Three ship with the package (``i2b2_2014``, ``meddocan``, ``presidio_synth``);
a user may load their own YAML file of the same shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from deid_core.errors import UnsupportedFormat

_COLOUR = re.compile(r"^#[0-9a-fA-F]{6}$")
BUILTIN_SCHEMES = ("i2b2_2014", "meddocan", "presidio_synth")


@dataclass(frozen=True, slots=True)
class LabelInfo:
    name: str
    category: str
    hipaa: bool
    colour: str


@dataclass(frozen=True, slots=True)
class LabelScheme:
    name: str
    language: str
    labels: tuple[LabelInfo, ...]

    @property
    def names(self) -> list[str]:
        return [info.name for info in self.labels]

    def info(self, label: str) -> LabelInfo:
        for item in self.labels:
            if item.name == label:
                return item
        # Unknown labels still render and evaluate; they are simply not HIPAA-marked.
        return LabelInfo(label, "OTHER", False, "#999999")

    def category(self, label: str) -> str:
        return self.info(label).category

    def hipaa_labels(self) -> set[str]:
        return {i.name for i in self.labels if i.hipaa}

    def categories(self) -> list[str]:
        return sorted({i.category for i in self.labels})

    def colours(self) -> dict[str, str]:
        return {i.name: i.colour for i in self.labels}


def _parse(raw: object, origin: str) -> LabelScheme:
    if not isinstance(raw, dict) or not isinstance(raw.get("labels"), dict):
        raise UnsupportedFormat(f"{origin}: a label scheme needs a 'labels' mapping")
    labels = []
    for name, spec in raw["labels"].items():
        if not isinstance(spec, dict) or "category" not in spec:
            raise UnsupportedFormat(f"{origin}: label {name!r} needs a 'category'")
        colour = str(spec.get("colour", "#999999"))
        if not _COLOUR.match(colour):
            raise UnsupportedFormat(f"{origin}: label {name!r} has an invalid colour")
        labels.append(
            LabelInfo(str(name), str(spec["category"]), bool(spec.get("hipaa", False)), colour)
        )
    return LabelScheme(str(raw.get("name", origin)), str(raw.get("language", "en")), tuple(labels))


def load_scheme(name_or_path: str | Path) -> LabelScheme:
    """Load a built-in scheme by name, or a YAML file by path."""
    key = str(name_or_path)
    if key in BUILTIN_SCHEMES:
        text = resources.files("deid_core").joinpath(f"data/schemes/{key}.yaml").read_text("utf-8")
        return _parse(yaml.safe_load(text), key)
    path = Path(key)
    if not path.is_file():
        raise UnsupportedFormat(
            f"unknown label scheme {key!r}: use one of {', '.join(BUILTIN_SCHEMES)} or a YAML path"
        )
    return _parse(yaml.safe_load(path.read_text("utf-8")), str(path))


def scheme_from_labels(name: str, labels: list[str], language: str = "en") -> LabelScheme:
    """A scheme for a corpus whose labels are not in any YAML file (colours cycle)."""
    palette = ["#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6",
               "#bfef45", "#469990", "#9a6324", "#800000", "#808000"]
    infos = tuple(
        LabelInfo(label, "OTHER", False, palette[i % len(palette)])
        for i, label in enumerate(sorted(labels))
    )
    return LabelScheme(name, language, infos)
