"""Text from traces made safe to read: invisible direction controls shown as what they are.

Escaping stops markup; it does not stop a right-to-left override (U+202E) or an isolate from making
`process_refund` display as something else, or from flipping the order of the words around it
("Trojan Source"). Every string a page or summary shows goes through `reveal_bidi`, so the reader
sees `<U+202E>` where the control was, and the text reads in the order it was sent.
"""

from __future__ import annotations

import re

# Embeddings, overrides, isolates and the invisible marks that steer bidirectional layout.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def reveal_bidi(text: str) -> str:
    return _BIDI.sub(lambda m: f"<U+{ord(m.group(0)):04X}>", text)
