"""The problem-shape corpus (shapes/corpus.toml) -> validated `Shape`s, by class.

Every recorded run before it measured square powers of two; the corpus holds the shapes users run:
square sizes that are not powers of two, ragged sizes (primes, a few elements past a tile multiple),
small problems, skinny M and skinny N, large K against a small M x N, small K against a large one,
and the projections of published transformers at a few token counts. A quarter of it (`holdout`)
is kept out of every model change and scored once at the end."""
from __future__ import annotations

from functools import lru_cache
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import UserError, read_toml, validation_message
from .paths import data_dir

CLASSES = ("square", "ragged", "small", "skinny_m", "skinny_n", "large_k", "small_k", "transformer")
MAX_DIM = 2**31 - 1


class Shape(BaseModel):
    """One GEMM problem: C (M x N) = A (M x K) . B (K x N)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9x.-]*$")
    cls: Literal[CLASSES] = Field(alias="class")
    M: int = Field(ge=1, le=MAX_DIM)
    N: int = Field(ge=1, le=MAX_DIM)
    K: int = Field(ge=1, le=MAX_DIM)
    holdout: bool
    source: Optional[str] = None  # where a real model's shape comes from

    @property
    def flop(self) -> float:
        return 2.0 * self.M * self.N * self.K

    @model_validator(mode="after")
    def _real_shapes_say_where_from(self) -> "Shape":
        if self.cls == "transformer" and not self.source:
            raise ValueError(f"shape {self.name}: a transformer shape names its source")
        return self


class Corpus(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    schema_version: Literal[1]
    shape: list[Shape] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> "Corpus":
        names = [s.name for s in self.shape]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"shape names repeat: {', '.join(dup)}")
        return self


@lru_cache(maxsize=None)
def corpus() -> tuple[Shape, ...]:
    """Every shape of shapes/corpus.toml, in file order."""
    path = data_dir("shapes") / "corpus.toml"
    try:
        return tuple(Corpus.model_validate(read_toml(path, "shape corpus")).shape)
    except ValidationError as exc:
        raise UserError(f"shape corpus {path}: {validation_message(exc)}") from None


def select(which: str = "all", holdout: Optional[bool] = None) -> list[Shape]:
    """The shapes of one class (or 'all'); holdout True/False keeps only the hold-out part or the rest."""
    if which != "all" and which not in CLASSES:
        raise UserError(f"unknown shape class '{which}'; classes: {', '.join(CLASSES)} (or all)")
    return [s for s in corpus() if which in ("all", s.cls) and (holdout is None or s.holdout == holdout)]
