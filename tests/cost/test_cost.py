"""Costs of calls and traces, hand-computed to the cent, cache tiers and web search included."""

from __future__ import annotations

import dataclasses
import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cost import PriceTable, cost_of_call, cost_of_trace, cost_of_usage, load_prices
from harness.cost._price_file import check_prices
from harness.cost._prices import SHIPPED, ModelPrice, ServerToolPrice, _shipped, build_table
from harness.errors import InputError
from harness.trace import Exchange, build_trace


def call_with(usage: dict[str, Any], model: str = "claude-opus-4-8") -> Any:
    exchange = Exchange(index=0, method="POST", url="https://api.anthropic.com/v1/messages", request_headers={},
                        request_body={"model": model, "max_tokens": 10,
                                      "messages": [{"role": "user", "content": "hi"}]},
                        status=200, response_headers={},
                        response_body={"type": "message", "role": "assistant", "model": model,
                                       "content": [{"type": "text", "text": "ok"}],
                                       "stop_reason": "end_turn", "usage": usage})
    return build_trace([exchange], "t")


BIG = {
    "input_tokens": 120_000, "output_tokens": 44_000,
    "cache_creation_input_tokens": 300_000, "cache_read_input_tokens": 1_500_000,
    "cache_creation": {"ephemeral_5m_input_tokens": 200_000, "ephemeral_1h_input_tokens": 100_000},
    "server_tool_use": {"web_search_requests": 7},
}


def test_a_hand_computed_opus_call_matches_to_the_cent() -> None:
    # Opus 4.8: input 5, output 25, 5m write 6.25, 1h write 10, read 0.50 per million; search $10 / 1,000.
    # 0.60 + 1.10 + 1.25 + 1.00 + 0.75 + 0.07 = 4.77
    cost = cost_of_call(call_with(BIG).calls[0])
    assert cost is not None
    assert (round(cost.input_usd, 2), round(cost.output_usd, 2)) == (0.60, 1.10)
    assert round(cost.cache_write_usd, 2) == 2.25
    assert round(cost.cache_read_usd, 2) == 0.75
    assert round(cost.server_tools_usd, 2) == 0.07 and cost.server_tool_uses == {"web_search": 7}
    assert round(cost.total_usd, 2) == 4.77
    assert abs(cost.total_usd - 4.77) < 1e-9


def test_without_the_ttl_split_cache_writes_are_priced_at_the_5_minute_rate() -> None:
    usage = {k: v for k, v in BIG.items() if k != "cache_creation"}
    cost = cost_of_call(call_with(usage).calls[0])
    assert cost is not None
    assert cost.cache_write_5m_tokens == 300_000 and cost.cache_write_1h_tokens == 0
    assert round(cost.cache_write_usd, 2) == 1.88  # 300,000 x 6.25 / 1e6 = 1.875
    assert round(cost.total_usd, 2) == 4.40


def test_an_unpriced_model_is_none_never_zero() -> None:
    trace = call_with({"input_tokens": 10, "output_tokens": 10}, model="claude-mystery-1")
    assert cost_of_call(trace.calls[0]) is None
    assert cost_of_trace(trace) is None


def test_dated_ids_and_aliases_resolve_to_the_base_model() -> None:
    prices = load_prices()
    assert prices.base_model("claude-sonnet-4-20250514") == "claude-sonnet-4"
    assert prices.base_model("opus") == "claude-opus-4-8"
    dated = cost_of_usage("claude-haiku-4-5-20251001", {"input_tokens": 1_000_000}, prices)
    assert dated is not None and dated.model == "claude-haiku-4-5" and dated.total_usd == pytest.approx(1.0)


def test_every_shipped_price_names_its_source_and_date() -> None:
    prices = load_prices()
    for price in [*prices.models.values(), *prices.server_tools.values()]:
        assert price.source and price.date, price


def _validated_table(data: dict[str, Any]) -> PriceTable:
    """The table of `data` as pydantic's validation makes it (`_price_file.PriceFile`), built from the models."""
    checked = check_prices(data, SHIPPED, lambda loc: None)
    models = {name: ModelPrice(model=name, **entry.model_dump()) for name, entry in checked.models.items()}
    tools = {name: ServerToolPrice(name=name, per_1000=entry.per_1000, usage_key=entry.usage_key or f"{name}_requests",
                                   source=entry.source, date=entry.date)
             for name, entry in checked.server_tools.items()}
    return PriceTable(models=models, aliases=dict(checked.aliases), server_tools=tools)


def _typed(table: PriceTable) -> list[tuple[str, Any, type]]:
    """Every value of `table` with its type: 5 and 5.0 are equal, but not written alike."""
    prices = [*table.models.values(), *table.server_tools.values()]
    return [(f.name, getattr(p, f.name), type(getattr(p, f.name))) for p in prices for f in dataclasses.fields(p)]


def test_the_shipped_table_is_a_valid_prices_file_built_as_validation_would() -> None:
    # `load_prices()` builds the shipped file without validating it (pydantic is not imported to build a
    # report): validated here, it must pass, and give the very table, value for value and type for type.
    validated = _validated_table(_shipped())
    assert load_prices() == validated and _typed(load_prices()) == _typed(validated)
    assert load_prices().models and load_prices().aliases and load_prices().server_tools


def test_a_table_is_built_from_valid_data_as_validation_would() -> None:
    # What YAML reads that validation turns into something else: whole-number prices, an unquoted date.
    data = {"models": {"m-1": {"input": 1, "output": 2.5, "cache_write_5m": 0, "cache_write_1h": 3,
                               "cache_read": 1, "date": datetime.date(2026, 1, 2)}},
            "aliases": {"m": "m-1"},
            "server_tools": {"web_search": {"per_1000": 10, "source": "page"},
                             "fetch": {"per_1000": 1.5, "usage_key": "fetches", "date": datetime.date(2026, 3, 4)}}}
    built = build_table(data)
    assert built == _validated_table(data) and _typed(built) == _typed(_validated_table(data))
    assert built.models["m-1"].date == "2026-01-02"
    assert built.server_tools["web_search"].usage_key == "web_search_requests"


def test_a_users_file_is_merged_over_the_shipped_table(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("models:\n  claude-opus-4-8: {output: 30}\n"
                    "  claude-mystery-1: {input: 1, output: 2, cache_write_5m: 1,"
                    " cache_write_1h: 1, cache_read: 0.1}\n", encoding="utf-8")
    prices = load_prices(path)
    assert prices.models["claude-opus-4-8"].output == 30 and prices.models["claude-opus-4-8"].input == 5
    mystery = cost_of_usage("claude-mystery-1", {"input_tokens": 1_000_000, "output_tokens": 1_000_000}, prices)
    assert mystery is not None and mystery.total_usd == pytest.approx(3.0)
    assert load_prices().models["claude-opus-4-8"].output == 25  # the shipped table is untouched


def test_a_table_cut_to_a_runs_models_prices_them_as_the_whole_table_and_reads_back(tmp_path: Path) -> None:
    # What a result keeps of the table its run was priced with: aliases and dated ids still resolve,
    # a model the table lacks stays unpriced, and the JSON a results line holds gives the same table.
    path = tmp_path / "prices.yaml"
    path.write_text("models:\n  claude-opus-4-8: {output: 30}\n", encoding="utf-8")
    table = load_prices(path)
    called = ["opus", "claude-sonnet-5-latest", "claude-haiku-4-5-20251001", "claude-mystery-1"]
    cut = table.for_models(called)
    assert sorted(cut.models) == ["claude-haiku-4-5", "claude-opus-4-8", "claude-sonnet-5"]
    assert cut.file == str(path) and cut.label == str(path) and load_prices().label == "shipped"
    back = PriceTable.from_dict(json.loads(json.dumps(cut.to_dict())))
    assert back == cut
    usage = {"input_tokens": 1000, "output_tokens": 1000}
    for model in called:
        assert cost_of_usage(model, usage, back) == cost_of_usage(model, usage, table)


def test_a_broken_prices_file_points_at_the_key(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("models:\n  claude-new-1: {input: 1}\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"models\.claude-new-1\.output: required key is missing"):
        load_prices(path)
    path.write_text("modles: {}\n", encoding="utf-8")
    with pytest.raises(InputError, match="modles: unknown key"):
        load_prices(path)


def test_a_misspelt_price_of_a_known_model_is_an_error_not_the_shipped_price(tmp_path: Path) -> None:
    # Merged over the shipped table, the typo would leave the shipped input price in force, unseen.
    path = tmp_path / "prices.yaml"
    path.write_text("models:\n  claude-opus-4-8:\n    output: 30\n    inptu: 2\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_prices(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:4: models.claude-opus-4-8.inptu: unknown key; valid keys: input, output,")
    assert "(did you mean 'input'?)" in message
    path.write_text("server_tools:\n  web_search: {per_1000: 10, usage_kye: x}\n", encoding="utf-8")
    with pytest.raises(InputError, match=r":2: server_tools\.web_search\.usage_kye: .*did you mean 'usage_key'"):
        load_prices(path)
    path.write_text("models:\n  claude-opus-4-8: {output: 30, source: mine, date: '2026-01-01'}\n", encoding="utf-8")
    assert load_prices(path).models["claude-opus-4-8"].output == 30  # every valid key still reads


def test_an_unknown_top_level_key_names_its_line_and_the_closest_valid_one(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("currency: USD\nalaises: {}\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"prices\.yaml:2: alaises: unknown key; .*did you mean 'aliases'"):
        load_prices(path)


def test_a_calls_cost_is_the_record_its_constructor_makes() -> None:
    """cost_of_usage makes its CallCost without the frozen record's __init__ (`frozen_record`): equal,
    shown alike, every field set in field order, still frozen, and read back from a pickle."""
    import dataclasses
    import pickle

    from harness.cost import CallCost

    cost = cost_of_usage("claude-opus-4-8", BIG, load_prices())
    assert cost is not None
    made = CallCost(**{f.name: getattr(cost, f.name) for f in dataclasses.fields(CallCost)})
    assert cost == made and repr(cost) == repr(made)
    assert list(vars(cost)) == [f.name for f in dataclasses.fields(CallCost)] and vars(cost) == vars(made)
    assert cost.server_tool_uses == {"web_search": 7} and round(cost.total_usd, 2) == 4.77
    with pytest.raises(dataclasses.FrozenInstanceError):
        cost.input_usd = 0.0  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(cost)) == cost
