"""Hostile recordings: each one finishes in seconds under a 2 GB memory limit, with a clear note or
exit-2 line, and the good recording checked beside it is still reported.

Each case runs `harness check HOSTILE GOOD` in a subprocess whose address space is capped with
`resource.setrlimit` (the `ulimit -v 2000000` of a shell), so a bomb that escapes a cap shows as a
MemoryError or a kill here, not as a slow test machine.
"""

from __future__ import annotations

import base64
import ctypes
import gzip
import json
import os
import resource
import shutil
import socket
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GOOD = REPO / "cassettes" / "buggy-dated-model-id.yaml"
MEMORY_LIMIT = 2_000_000 * 1024  # ulimit -v 2000000 (KiB)
MESSAGES = "https://api.anthropic.com/v1/messages"


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def check(*paths: Path | str, preexec: Callable[[], None] = limited) -> tuple[int, str, dict[str, dict[str, object]]]:
    done = subprocess.run(
        [sys.executable, "-m", "harness", "check", "--format", "json", *map(str, paths)],
        capture_output=True, text=True, timeout=120, preexec_fn=preexec,
    )
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr, done.stderr
    files = {f["path"]: f for f in json.loads(done.stdout)["files"]}
    return done.returncode, done.stderr, files


def cassette(body: str, *, status: int = 200, before: str = "", request_body: str = '"{}"') -> str:
    return f"""{before}interactions:
- request:
    method: POST
    uri: {MESSAGES}
    body: {request_body}
    headers: {{}}
  response:
    status: {{code: {status}, message: OK}}
    headers: {{content-type: [application/json]}}
    body: {body}
version: 1
"""


def alias_bomb(levels: int = 12) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def gzip_bomb(inflated_mb: int) -> bytes:
    """A gzip body that inflates to `inflated_mb` MB of zeros, made without holding them."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1024 * 1024)
    return b"".join([*(packer.compress(block) for _ in range(inflated_mb)), packer.flush()])


def hostile_cases() -> Iterator[tuple[str, str | bytes, str]]:
    """(name, content, what the hostile file's report must say)."""
    yield "alias-bomb-body.yaml", cassette("{string: *a11}", before=alias_bomb()), "aliases"
    yield "alias-bomb-parsed-body.yaml", cassette("{string: ''}", before=alias_bomb()).replace(
        "body: {string: ''}", "parsed_body: *a11"), "aliases"
    yield "alias-cycle.yaml", cassette("{string: &loop [*loop]}"), "cycle"
    packed = gzip_bomb(300)
    bomb = base64.b64encode(packed).decode()
    yield "gzip-bomb.yaml", cassette(f"{{string: !!binary '{bomb}'}}"), "after decompression, not read"
    yield "gzip-bomb-file.yaml.gz", packed, "is gzip-compressed and inflates to over the 256 MB limit"
    deflate = base64.b64encode(zlib.compress(bytes(300 * 1024 * 1024), 9)).decode()
    yield "deflate-bomb.har", json.dumps({"log": {"entries": [{
        "request": {"method": "POST", "url": MESSAGES, "headers": []},
        "response": {"status": 200, "headers": [{"name": "content-encoding", "value": "deflate"}],
                     "content": {"text": deflate, "encoding": "base64"}}}]}}), "after decompression, not read"
    yield "long-int.yaml", cassette("{string: ''}", before="x: " + "9" * 5000 + "\n"), "5,000 digits"
    yield "long-int.json", '{"interactions": [], "x": ' + "9" * 5000 + "}", "4,300 digits"
    yield "bad-date.yaml", cassette("{string: '{}'}", before="recorded_at: 2024-02-30T00:00:00Z\n"), ""
    yield "deep.json", "[" * 100_000 + "]" * 100_000, "nested too deeply"
    yield "deep.yaml", "a:\n" + "".join("  " * i + "- \n" for i in range(1, 3000)), "nest"
    yield "not-json-200.yaml", cassette("{string: '<html>Service Unavailable</html>'}"), "not JSON"
    yield "deep-event.sse", f"event: message_start\ndata: {'[' * 100_000}{']' * 100_000}\n\n", "nested too deep to read"
    yield "deep-tool-input.sse", stream_of(json.dumps("[" * 100_000 + "]" * 100_000)), "nested too deep to read"
    yield "deep-answer.sse", stream_of(json.dumps(json.dumps({"a": json.loads("[" * 150 + "]" * 150)}))), "nests deeper"
    # An Amazon event stream's frame whose prelude (checksum right) says it is 4 GB long.
    prelude = struct.pack("!II", 0xFFFF_FFF0, 0)
    lying = base64.b64encode(prelude + struct.pack("!I", zlib.crc32(prelude)) + bytes(64)).decode()
    yield "bedrock-lying-length.yaml", cassette(f"{{string: !!binary '{lying}'}}").replace(
        "[application/json]", "[application/vnd.amazon.eventstream]"), "which the data does not hold"


def stream_of(partial_json: str) -> str:
    """An event-stream dump of one tool_use answer whose input arrives as `partial_json` (a JSON string)."""
    events = [
        '{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],'
        '"model":"claude-sonnet-4-5","usage":{"input_tokens":1,"output_tokens":1}}}',
        '{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}',
        '{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":'
        + partial_json + "}}",
        '{"type":"content_block_stop","index":0}',
        '{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3}}',
        '{"type":"message_stop"}',
    ]
    return "".join(f"data: {event}\n\n" for event in events)


def test_the_good_recording_alone_is_checked() -> None:
    status, _, files = check(GOOD)
    assert status == 1 and files[str(GOOD)]["calls"]


@pytest.mark.parametrize("name,content,said", list(hostile_cases()), ids=[c[0] for c in hostile_cases()])
def test_each_hostile_file_ends_in_a_clear_line_and_the_good_one_is_still_checked(
    tmp_path: Path, name: str, content: str | bytes, said: str
) -> None:
    hostile = tmp_path / name
    hostile.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    status, _, files = check(hostile, GOOD)
    assert files[str(GOOD)]["calls"], files  # the good file beside it is still read and checked
    report = files[str(hostile)]
    text = f"{report['error']} {report['notes']}"
    assert said in text, report
    assert status in (1, 2)
    if report["error"] is not None:
        assert status == 2


def test_a_device_is_refused_with_one_line() -> None:
    status, _, files = check("/dev/zero", GOOD)
    assert status == 2 and "character device, not a regular file" in str(files["/dev/zero"]["error"])
    assert files[str(GOOD)]["calls"]


def test_a_folder_walk_reads_only_regular_files(tmp_path: Path) -> None:
    shutil.copy(GOOD, tmp_path / "good.yaml")
    os.mkfifo(tmp_path / "pipe.yaml")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "sock.yaml"))
        done = subprocess.run([sys.executable, "-m", "harness", "check", str(tmp_path)],
                              capture_output=True, text=True, timeout=60, preexec_fn=limited)
    assert "good.yaml: 1 thread(s)" in done.stdout
    assert "pipe.yaml (a FIFO (named pipe))" in done.stdout and "sock.yaml (a socket)" in done.stdout
    assert "not regular files" in done.stdout


_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def _without_root_reads() -> None:
    """Run as a user whom permissions apply to: root (as in most containers) loses its capabilities
    to read and search any folder, from the bounding set, so the program it runs never gets them."""
    limited()
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for capability in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
            if libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) refused")


def test_an_unreadable_folder_or_file_is_reported_not_skipped(tmp_path: Path) -> None:
    shutil.copy(GOOD, tmp_path / "good.yaml")
    (tmp_path / "locked").mkdir()
    shutil.copy(GOOD, tmp_path / "locked" / "inside.yaml")
    shutil.copy(GOOD, tmp_path / "secret.yaml")
    (tmp_path / "secret.yaml").chmod(0o000)
    (tmp_path / "locked").chmod(0o000)
    try:
        done = subprocess.run([sys.executable, "-m", "harness", "check", str(tmp_path)],
                              capture_output=True, text=True, timeout=60, preexec_fn=_without_root_reads)
    except subprocess.SubprocessError as exc:
        pytest.skip(f"cannot drop root's read-anything capabilities here ({exc})")
    finally:
        (tmp_path / "locked").chmod(0o700)
    assert "Traceback" not in done.stderr, done.stderr
    assert "good.yaml: 1 thread(s)" in done.stdout
    assert f"{tmp_path / 'locked'}: folder not read (Permission denied)" in done.stdout, done.stdout
    assert f"{tmp_path / 'secret.yaml'}: not read" in done.stdout
    assert "cannot read the recording (Permission denied)" in done.stdout
    assert "2 unreadable" in done.stdout and done.returncode == 2


def test_gzip_members_and_a_small_body_still_inflate() -> None:
    from harness.trace._decode import inflate

    assert inflate(gzip.compress(b"ab") + gzip.compress(b"cd")) == b"abcd"
