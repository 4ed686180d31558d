"""Each run's details and its record for the page's list, made by whichever process read the run, and
packed CHUNK_RUNS runs at a time (`_Details`): all the page holds of a run, made as it is read.

Apart from `_render`, which writes the page with Jinja once every run is read: the process that reads
runs beside `harness report`'s (`_files`' worker) imports this, never a template engine.
"""

from __future__ import annotations

import base64
import gzip
import importlib.machinery
import importlib.util
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._console import holds_bidi, reveal_bidi
from .._secrets import may_hold_bearer, may_hold_secret_json, redact_bearer_json
from ..cost import CallCost
from ..trace._normalize import printable
from ..trace._scrub import default_secrets, redact, redact_json
from ._data import RunEntry, tokens, usd
from ._details import NotPlain, plain, run_details

if TYPE_CHECKING:
    from ..results import ExpectationResult

CHUNK_RUNS = 50
"""Runs per compressed chunk: opening one run inflates its chunk, a few hundred KB of JSON at most
for typical runs, and neighbouring runs (same scenario, other settings) compress well together."""


GZIP_LEVEL = 3
"""The last of zlib's fast levels (1 to 3 take the first match they find; 4 and up weigh the next one):
on the bench file's chunks (2,000 runs) 58.6k instructions and 7 us a run where zlib's default, 6, took
127.7k and 15 to 18 us, for chunks 37% larger; on the 10,000-run page its runs' details are 1.8 MB of
base64 where they were 1.3 MB, on a page of 9.8 MB (aimed at 25 at most). 1 and 2 are no faster, and
larger; 9 (gzip.compress's own) took 15% more than 6 for chunks 5% smaller."""


@dataclass(frozen=True)
class RunChunk:
    """The details of runs `first`..`first + count - 1`: a JSON array, gzip, base64; and their records
    as the page lists them."""

    first: int
    count: int
    data: str
    records: str | None = None
    """The runs' records (`_record_json`), comma-separated: made by the process that read the runs, as it
    read them, so that the page's writing, after both processes are done, only puts them in."""
    secrets: tuple[str, ...] = ()
    """What `records` (and `data`) were redacted of: records made with other secrets than the page's
    are made again as it is written."""


class _Details:
    """Takes each run's details as `prepare` hands it over (trace loaded) and packs every CHUNK_RUNS of
    them: the page's script inflates a chunk when one of its runs is opened and draws the run from
    its data. Redacted here: once compressed, the page's redaction cannot see them. Each run's record
    for the page's list is made here too: in whichever process reads the run, not after both are done."""

    def __init__(self, secrets: tuple[str, ...] | None = None) -> None:
        """`secrets`: the values to redact, when not this process's own (a worker's are its caller's)."""
        self._secrets = default_secrets() if secrets is None else secrets
        self._pending: list[bytes] = []
        self._records: list[str] = []
        self._first = 1
        self.chunks: list[RunChunk] = []

    def __call__(self, run: RunEntry, call_costs: list[CallCost | None]) -> None:
        if not self._pending:
            self._first = run.n
        # Bearer tokens are looked for in the whole chunk at once, as it is packed (`close`).
        self._pending.append(_details_bytes(run_details(run, call_costs), self._secrets))
        self._records.append(_record_json(run, self._secrets))
        if len(self._pending) == CHUNK_RUNS:
            self.close()

    def close(self) -> None:
        if self._pending:
            details = b"[" + b",".join(self._pending) + b"]"
            # A Bearer token in any run's details, looked for in the chunk's bytes once: for each run's
            # text, lowering it (non-ASCII text lowers slowly) cost a tenth of the runs' redaction.
            if may_hold_bearer(details):
                details = redact_bearer_json(details.decode("utf-8")).encode("utf-8")
            packed = gzip.compress(details, compresslevel=GZIP_LEVEL, mtime=0)
            self.chunks.append(RunChunk(self._first, len(self._pending), base64.b64encode(packed).decode("ascii"),
                                        ",".join(self._records), self._secrets))
            self._pending = []
            self._records = []


def _details_bytes(details: dict[str, Any], secrets: tuple[str, ...]) -> bytes:
    """A run's details as its chunk holds them: `script_json`, redacted of `secrets` (not yet of Bearer
    tokens), UTF-8."""
    written = _json_of(details)
    data = _script_bytes(written, secrets) if type(written) is bytes else None
    if data is None:
        text = redact_json(script_text(_text(written)), secrets, bearer=False)
        # Encoded once, here: `printable`'s test for a lone surrogate (valid JSON, not UTF-8) is this very
        # encoding. Redacted before a lone surrogate is escaped, so a secret's forms meet the text as it
        # was recorded.
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            data = printable(text).encode("utf-8")
    return data


def _run_record(run: RunEntry, secrets: tuple[str, ...]) -> dict[str, Any]:
    """What the page's script needs to list a run (summary row, ledger row, the run's heading),
    formatted here so the page and the other outputs say a number the same way. `secrets`: what its
    search text is redacted of (see `_search_text`)."""
    r, u = run.result, run.result.usage
    unmet = r.failed_expectations
    return {
        "n": plain(run.n), "id": plain(r.run_id), "status": plain(r.status), "scenario": plain(r.scenario),
        "model": plain(r.model), "effort": plain(r.effort or "default"), "mode": plain(r.mode), "steps": plain(r.steps),
        "tokens": tokens(run.tokens), "cost": usd(run.cost_usd),
        "unpriced": run.cost_usd is None, "search": _search_text(run, secrets, unmet), "error": plain(r.error),
        "usage": [tokens(u.input_tokens), tokens(u.output_tokens), tokens(u.cache_creation_input_tokens),
                  tokens(u.cache_read_input_tokens)],
        "findings": [{"href": link.href, "code": plain(link.finding.code), "severity": plain(link.finding.severity),
                      "where": link.finding.where(), "message": plain(link.finding.message),
                      "expected": link.expected}
                     for link in run.findings],
        "disagree": [plain(score.name) for score in r.scores if score.disagreement],
        # A run that failed on what its scenario expects (a minimum score, a final text) shows it
        # where it is listed, as findings and harness errors are: not only once it is opened.
        "unmet": [f"expect {e.name}: {e.message}" for e in unmet],
    }


def script_json(value: Any) -> str:
    """`value` as JSON to put inside a `<script type="application/json">` element: direction controls
    shown (`reveal_bidi`), then `<` written as its escape, so no recorded string can end the element or
    open a comment; JSON.parse reads it back."""
    return script_text(page_json(value))


def script_text(text: str) -> str:
    """JSON `text` as `script_json` puts it in a page."""
    return reveal_bidi(text).replace("<", "\\u003c")


def _script_bytes(data: bytes, secrets: tuple[str, ...]) -> bytes | None:
    """`redact_json(script_text(data.decode()), secrets, bearer=False).encode()` made on pydantic_core's
    UTF-8 `data` as it is, when that is all it would change: `<`, an ASCII character, is written as its
    escape in the bytes as in the text. None when either would change more (a direction control, the form
    of a secret, a key's start: the text's own steps then, as ever). Decoding the text only to find it
    clean and encoding it again cost half as much as writing it (the runs' details are mostly not ASCII:
    a "·" in each step's heading); the bytes hold no lone surrogate (pydantic_core refuses one), so
    `printable` has nothing to escape either."""
    if holds_bidi(data):
        return None
    data = data.replace(b"<", b"\\u003c")
    return None if may_hold_secret_json(data, secrets) else data


def _text(written: bytes | str) -> str:
    return written.decode("utf-8") if isinstance(written, bytes) else written


def _first_to_json(value: Any) -> bytes:
    """`to_json(value)`, `to_json` found at its first use: pydantic_core's package's when it is imported
    (pydantic, a user's prices file), else its compiled module's alone. Importing the package imports its
    schema's types too (`core_schema`, typing_extensions: 85 M instructions, about 0.02 s of CPU in each
    process of a report), which writing JSON never uses. The package, imported later, takes the very module
    as its own (though not as its attribute: `import pydantic_core._pydantic_core` still gives it)."""
    global _to_json
    _to_json = _compiled_to_json()
    return _to_json(value)


def _compiled_to_json() -> Callable[[Any], bytes]:
    name = "pydantic_core._pydantic_core"
    if "pydantic_core" not in sys.modules:
        try:
            package = importlib.util.find_spec("pydantic_core")
            spec = package and importlib.machinery.PathFinder.find_spec(name, package.submodule_search_locations)
            if spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                spec.loader.exec_module(module)
                return module.to_json  # type: ignore[no-any-return]
        except Exception:  # noqa: BLE001 - laid out otherwise than it was: imported as the package says
            sys.modules.pop(name, None)
    from pydantic_core import to_json

    return to_json


_to_json: Callable[[Any], bytes] = _first_to_json


def page_json(value: Any) -> str:
    """`value` (a run's details or record: dicts, lists and scalars) as compact JSON, non-ASCII as is:
    what `json.dumps(value, ensure_ascii=False, separators=(",", ":"))` writes.

    Written by pydantic_core's encoder (pydantic's and the Anthropic SDK's, in Rust), which took 10 us
    where `json`'s C encoder took 27 for each run's details or record of the bench file (2,000 runs),
    and writes the same text for str, int, bool, None, lists and dicts. Anything else a result built in
    code might hold reaches here wrapped (`_details.plain`), which it refuses, as it refuses a lone
    surrogate (valid JSON, not UTF-8): such a value is written by `json`, as before."""
    return _text(_json_of(value))


def _json_of(value: Any) -> bytes | str:
    """`page_json(value)`: UTF-8 bytes as pydantic_core writes it, or text where it refuses `value`."""
    try:
        return _to_json(value)
    except ValueError:  # PydanticSerializationError is one
        return _COMPACT.encode(value)


class _Encoder(json.JSONEncoder):
    def default(self, o: Any) -> Any:
        """A `NotPlain` written as its value, as if it stood there itself; anything else refused, as before."""
        return o.value if isinstance(o, NotPlain) else super().default(o)


# What json.dumps(value, ensure_ascii=False, separators=(",", ":")) uses, made once: json.dumps would
# make one for each of the 20,000 values a 10,000-run page holds. Without the check for circular
# references: it keeps every dict and list of the value in a table while it is written, a sixth of
# writing a run's details (dozens of small dicts a step), and what is written here never holds a cycle
# (records built for the page from JSON read off a results line or a recording).
_COMPACT = _Encoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)


def _record_json(run: RunEntry, secrets: tuple[str, ...]) -> str:
    """The run's record as the page lists it: JSON, direction controls shown, redacted (as every piece
    of the page is)."""
    return _record_text(_run_record(run, secrets), secrets)


def _record_text(record: dict[str, Any], secrets: tuple[str, ...]) -> str:
    written = _json_of(record)
    data = _script_bytes(written, secrets) if type(written) is bytes else None
    if data is None:
        return redact_json(printable(script_text(_text(written))), secrets)
    # As redact_json's last step (`redact_bearer_json`), its test made on the bytes, not the text encoded again.
    return redact_bearer_json(data.decode("utf-8")) if may_hold_bearer(data) else data.decode("utf-8")


def _search_text(run: RunEntry, secrets: tuple[str, ...], unmet: list[ExpectationResult]) -> str:
    """The run's words a filter matches, lowercased: redacted first, as the page's redaction of the
    record cannot find a secret once lowercased (a key is mixed case; an error or a finding may hold one)."""
    r = run.result
    words = [r.run_id, r.scenario, r.model, r.effort or "default", r.mode, r.status, r.error or ""]
    words += [f"{f.finding.code} {f.finding.message}" for f in run.findings]
    words += [f"{score.name} verdicts disagree" for score in r.scores if score.disagreement]
    words += [f"expect {e.name}" for e in unmet]
    return redact(" ".join(words), secrets).lower()
