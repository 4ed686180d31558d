"""JSON text read as `json.loads` reads it, at jiter's speed.

A report reads every results line and every exchange's request and response body from its raw text:
with `json.loads` that was a third of reading a run (10,000 runs: 1.2 s for the lines, 0.6 s more for
the bodies). jiter reads the same text two to three times as fast, into the same plain dicts, lists,
strings and numbers. It accepts nothing `json.loads` refuses, so what it reads is taken as it is;
what it refuses, `json.loads` reads again, and either reads it (a lone surrogate escape, nesting past
jiter's 200 levels) or raises its own error, the one a caller has always said. Held to that by
tests/trace/test_json.py, value for value and type for type.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import jiter

JITER_INT_DIGITS = 4300
"""The longest integer jiter reads, whatever Python's own limit is (`sys.get_int_max_str_digits`)."""


def loads(text: str | bytes) -> Any:
    """`json.loads(text)`: the same value, or the same exception. Bytes are text's UTF-8 (a results line as
    read), decoded only when jiter refuses them, which it does bytes that are not UTF-8: `json.loads` of
    them then raises UnicodeDecodeError, as decoding them first would have."""
    # Below jiter's limit Python reads no longer integer than the limit it is given (-X int_max_str_digits,
    # PYTHONINTMAXSTRDIGITS): jiter would read one json.loads refuses, so json.loads reads all.
    limit = sys.get_int_max_str_digits()
    if limit == 0 or limit >= JITER_INT_DIGITS:
        try:
            # Text with a lone surrogate has no UTF-8 (UnicodeEncodeError, a ValueError): json.loads reads it.
            return jiter.from_json(text if isinstance(text, bytes) else text.encode("utf-8"), allow_inf_nan=True)
        except ValueError:
            pass  # read again below: json.loads says what is wrong, in its words, or reads what jiter does not
    # Bytes decoded here, strictly: json.loads of bytes would guess UTF-16 and let encoded surrogates through.
    return json.loads(text.decode("utf-8") if isinstance(text, bytes) else text)
