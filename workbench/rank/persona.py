"""Ranking weights per persona, and the persona as a ranking feature.

workbench.yaml may set the weights of the ranking rule for everyone (``ranking.default``) and per
persona (``ranking.personas.NAME``): relevance (the fused score's weight), freshness and authority
(the priors' weights), pins (a bonus for pinned candidates), dense (the lexical/dense balance of
weighted fusion; unset: the built-in rule) and persona (a bonus for fragments scoped to the persona
the caller acts in: a preference, never a filter). With the defaults the ranking is the one without
personas.

    final = relevance × priors(fused) + persona × [scoped to the persona] + pins × [pinned]

Pure: parsing, validation and arrays; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from ..errors import ValidationError

KEYS = ("relevance", "freshness", "authority", "pins", "dense", "persona")
MAX_WEIGHT = 10.0


@dataclass(frozen=True)
class Weights:
    """The ranking rule's weights (see the module docstring); ``dense`` None keeps the built-in balance."""

    relevance: float = 1.0
    freshness: float = 0.1
    authority: float = 0.1
    pins: float = 0.0
    dense: float | None = None
    persona: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def changed(self, base: "Weights") -> dict[str, Any]:
        """The weights that differ from ``base`` (what workbench.yaml needs to say)."""
        mine, theirs = asdict(self), asdict(base)
        return {k: mine[k] for k in KEYS if mine[k] != theirs[k] and mine[k] is not None}


DEFAULT = Weights()


@dataclass(frozen=True)
class Ranking:
    """``ranking:`` of workbench.yaml: the weights for calls in no persona, and per persona."""

    default: Weights = DEFAULT
    personas: Mapping[str, Weights] = None  # type: ignore[assignment]

    def __post_init__(self):
        if self.personas is None:
            object.__setattr__(self, "personas", {})

    def weights(self, persona: str | None) -> Weights:
        """The weights of a call made in ``persona`` (None: in none): the persona's, else the default."""
        if persona is not None and persona in self.personas:
            return self.personas[persona]
        return self.default

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.default != DEFAULT:
            out["default"] = self.default.changed(DEFAULT)
        if self.personas:
            out["personas"] = {name: w.changed(self.default) for name, w in sorted(self.personas.items())}
        return out


def parse(raw: Any, *, file: str, personas: set[str] | None = None) -> Ranking:
    """``ranking:`` as read from workbench.yaml, validated: unknown keys, non-numbers, negative or
    huge values and undeclared personas raise a ``ValidationError`` naming the file and the key."""
    if raw is None:
        return Ranking()
    if not isinstance(raw, Mapping):
        raise ValidationError("expected a mapping (default:, personas:)", file=file, field="ranking")
    for key in raw:
        if key not in ("default", "personas"):
            raise ValidationError(f"unknown key {key!r} (valid: default, personas)", file=file,
                                  field=f"ranking.{key}")
    default = weights(raw.get("default"), DEFAULT, file=file, where="ranking.default")
    people = raw.get("personas") or {}
    if not isinstance(people, Mapping):
        raise ValidationError("expected a mapping of persona name to weights", file=file, field="ranking.personas")
    out = {}
    for name, value in people.items():
        where = f"ranking.personas.{name}"
        if not isinstance(name, str) or (personas is not None and name not in personas):
            known = ", ".join(sorted(personas or ())) or "none"
            raise ValidationError(f"unknown persona {name!r} (declared by the orgs: {known})", file=file, field=where)
        out[name] = weights(value, default, file=file, where=where)
    return Ranking(default, out)


def weights(raw: Any, base: Weights, *, file: str, where: str) -> Weights:
    """A mapping of weights over ``base``, validated (see ``parse``)."""
    if raw is None:
        return base
    if not isinstance(raw, Mapping):
        raise ValidationError(f"expected a mapping of weights ({', '.join(KEYS)})", file=file, field=where)
    values: dict[str, float] = {}
    for key, value in raw.items():
        if key not in KEYS:
            raise ValidationError(f"unknown weight {key!r} (valid: {', '.join(KEYS)})", file=file,
                                  field=f"{where}.{key}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
            raise ValidationError(f"expected a number, not {value!r}", file=file, field=f"{where}.{key}")
        top = 1.0 if key == "dense" else MAX_WEIGHT
        if not 0.0 <= float(value) <= top:
            raise ValidationError(f"must be from 0 to {top:g} (got {value!r})", file=file, field=f"{where}.{key}")
        values[key] = float(value)
    return replace(base, **values)


def adjust(final: np.ndarray, in_persona: np.ndarray | None, pinned: np.ndarray | None, w: Weights) -> np.ndarray:
    """``final`` (after the priors) scaled by the relevance weight, plus the persona and pin bonuses
    for the candidates (finite scores) scoped to the persona and pinned. -inf stays -inf."""
    if w.relevance == 1.0 and (in_persona is None or w.persona == 0.0) and (pinned is None or w.pins == 0.0):
        return final
    finite = np.isfinite(final)
    out = np.where(finite, final * w.relevance, -np.inf)
    if in_persona is not None and w.persona:
        out = np.where(finite & in_persona, out + w.persona, out)
    if pinned is not None and w.pins:
        out = np.where(finite & pinned, out + w.pins, out)
    return out
