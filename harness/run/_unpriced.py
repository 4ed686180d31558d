"""Which models of the runs about to call the API have no price, and the one warning that says so,
before anything runs: `harness run` and the pytest plugin's scenario items say it alike, each naming
its own prices option."""

from __future__ import annotations

from collections.abc import Callable

from .._yaml import Loc
from ..cost import PriceTable
from ..scenario import ScenarioFile
from ..scenario._model import PersonaUser
from ._plan import PlannedRun

Unpriced = tuple[ScenarioFile, Loc | None, str]
"""A model without a price, with the scenario naming it and where (None: an agent model given by `--model`)."""


def unpriced_models(runs: list[PlannedRun], table: PriceTable, *, by_option: bool) -> list[Unpriced]:
    """Where the runs name a model `table` does not price, agents' models first: the location in the
    scenario, or None for an agent model given by --model (`by_option`)."""
    agents = [(run.source, None if by_option else _agent_model_loc(run.source, run.cell.model), run.cell.model)
              for run in runs]
    sources = {id(run.source): run.source for run in runs}
    harness = [(source, loc, model) for source in sources.values() for loc, model in _harness_models(source)]
    return [(source, loc, model) for source, loc, model in [*agents, *harness] if table.model_price(model) is None]


def unpriced_warning(unpriced: list[Unpriced], option: str, shown: Callable[[str], str] = str) -> str | None:
    """The line that says, once, which models of the paid runs (agents', judges', simulated users')
    have no price, with the places that name them (`shown` as the front shows paths) and how to price
    them (`option`, the front's `--prices`): what their calls cost will be unknown, never read as free."""
    places: dict[str, list[str]] = {}
    for source, loc, model in unpriced:
        line = source.line_of(loc) if loc is not None else None
        path = shown(str(source.path))
        place = "--model" if loc is None else f"{path}:{line}" if line is not None else path
        if place not in places.setdefault(model, []):  # the runs of a matrix or dataset share their scenario's lines
            places[model].append(place)
    if not places:
        return None
    named = "; ".join(f"{model} ({', '.join(where[:3])}{' and more' if len(where) > 3 else ''})"
                      for model, where in sorted(places.items()))
    return (f'harness: no price for model(s) {named}: what their calls cost will show as "unpriced", never $0. '
            f"Price them with {option} FILE (a YAML with the shape of harness/cost/prices.yaml), or afterwards "
            "with harness report RESULTS --prices FILE")


def _agent_model_loc(source: ScenarioFile, model: str) -> Loc:
    """Where a scenario names one of its agent's models: its `matrix.models` entry, or its `model`."""
    matrix = source.scenario.matrix
    if matrix and matrix.models and model in matrix.models:
        return ("matrix", "models", list(matrix.models).index(model))
    return ("model",)


def _harness_models(source: ScenarioFile) -> list[tuple[tuple[str | int, ...], str]]:
    """Where a scenario names the models of the harness's own calls (its judges, its simulated user),
    and which."""
    found: list[tuple[tuple[str | int, ...], str]] = []
    for number, entry in enumerate(source.score_entries):
        model = getattr(entry.options, "model", None) if entry.kind == "judge" else None
        if isinstance(model, str):
            found.append((("score", number, entry.scorer, "model"), model))
    user = source.scenario.user
    if isinstance(user, PersonaUser):
        found.append((("user", "model"), user.model or source.scenario.model))
    return found
