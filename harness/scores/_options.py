"""The base of every scorer's options: strict, so a typo in a scenario's `score:` entry is an error."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Options(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)
