"""Decode a recorded body: base64 strictly, and inflate within a size limit (a 3 MB gzip bomb must
not become gigabytes).

Every reader of compressed bodies (each recording format, the recorder's secret scan) inflates
through `inflate`, which streams the decompression and stops as soon as the output passes
`MAX_INFLATED_BYTES`.
"""

from __future__ import annotations

import base64
import zlib

MAX_INFLATED_BYTES = 64 * 1024 * 1024
"""Largest body kept after decompression (64 MB). A Messages answer is at most a few megabytes."""

GZIP_MAGIC = b"\x1f\x8b"
GZIP_WBITS = 16 + zlib.MAX_WBITS
ZLIB_WBITS = zlib.MAX_WBITS
RAW_DEFLATE_WBITS = -zlib.MAX_WBITS


class BodyTooLarge(Exception):
    """The body inflates to more than the limit; it was not read."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"larger than {limit // 2**20} MB after decompression")


def inflate(data: bytes, wbits: int = GZIP_WBITS, *, limit: int = MAX_INFLATED_BYTES) -> bytes:
    """`data` decompressed (gzip members one after another, zlib or raw deflate, per `wbits`).

    Raises BodyTooLarge past `limit`, zlib.error on corrupt data and EOFError on a cut one.
    """
    out = bytearray()
    pending = data
    while True:
        inflater = zlib.decompressobj(wbits)
        chunk = pending
        while chunk:
            out += inflater.decompress(chunk, limit + 1 - len(out))
            if len(out) > limit:
                raise BodyTooLarge(limit)
            chunk = inflater.unconsumed_tail
        if not inflater.eof:
            raise EOFError("compressed data ends before its end-of-stream marker")
        pending = inflater.unused_data
        # gzip allows several members back to back (gzip.decompress reads them all).
        if wbits != GZIP_WBITS or not pending.startswith(GZIP_MAGIC):
            return bytes(out)


def inflate_bounded(data: bytes) -> bytes | None:
    """Best effort for a scan: the gzip body inflated, or None when it is corrupt or too large."""
    try:
        return inflate(data)
    except (BodyTooLarge, zlib.error, EOFError):
        return None


def base64_bytes(text: str | bytes) -> bytes:
    """The bytes a recording's base64 text spells. Strict: `base64.b64decode` by default drops every
    character outside the alphabet, so a body of junk was read as empty, with no word said; here such
    a character is an error (binascii.Error, a ValueError). Whitespace is allowed: Ruby's
    `Base64.encode64` wraps its lines."""
    if not isinstance(text, (str, bytes)):
        raise TypeError(f"expected base64 text, got {type(text).__name__}")
    data = text.encode("ascii") if isinstance(text, str) else text  # non-ASCII: UnicodeEncodeError, a ValueError
    return base64.b64decode(b"".join(data.split()), validate=True)
