"""`python -m harness.transport.scripted` rewrites the shipped script JSON schema from the models."""

import sys

from ._format import SCHEMA_PATH, schema_text

SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
print(f"wrote {SCHEMA_PATH}", file=sys.stderr)
