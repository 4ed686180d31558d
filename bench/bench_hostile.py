"""Benchmark: `harness check HOSTILE GOOD` under a 2 GB address-space limit (`ulimit -v 2000000`),
beside the floor of `harness check GOOD` alone.

Each hostile file is a few kilobytes to a few hundred that, read naively, takes gigabytes or never
ends: a YAML alias bomb, gzip and deflate bombs, a 5,000-digit integer, JSON nested 100,000 deep,
and /dev/zero. With the caps, each must cost about what the good file costs, exit 2 or with a note,
and still report the good file (the command fails here otherwise).

    .venv/bin/python bench/bench_hostile.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import base64
import json
import resource
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

from _measure import Sample, measure_process, row

REPO = Path(__file__).resolve().parents[1]
GOOD = REPO / "cassettes" / "buggy-dated-model-id.yaml"
LIMIT = 2_000_000 * 1024
URL = "https://api.anthropic.com/v1/messages"


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def cassette(body: str, before: str = "") -> str:
    return (f"{before}interactions:\n- request: {{method: POST, uri: '{URL}', body: '{{}}'}}\n"
            f"  response: {{status: {{code: 200}}, headers: {{}}, body: {body}}}\n")


def hostile_files(folder: Path) -> dict[str, Path]:
    laughs = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    laughs += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 12)]
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    gz = b"".join([*(packer.compress(bytes(1 << 20)) for _ in range(3000)), packer.flush()])  # 3 GB inflated
    deflated = zlib.compress(bytes(1 << 30), 9)  # 1 GB inflated
    contents = {
        "alias-bomb.yaml": cassette("{string: *a11}", "\n".join(laughs) + "\n"),
        "gzip-bomb.yaml": cassette(f"{{string: !!binary '{base64.b64encode(gz).decode()}'}}"),
        "deflate-bomb.har": json.dumps({"log": {"entries": [{
            "request": {"method": "POST", "url": URL, "headers": []},
            "response": {"status": 200, "headers": [{"name": "content-encoding", "value": "deflate"}],
                         "content": {"text": base64.b64encode(deflated).decode(), "encoding": "base64"}}}]}}),
        "long-int.yaml": cassette("{string: ''}", "n: " + "9" * 5000 + "\n"),
        "deep.json": "[" * 100_000 + "]" * 100_000,
    }
    paths = {}
    for name, text in contents.items():
        paths[name] = folder / name
        paths[name].write_text(text, encoding="utf-8")
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="repetitions (at least 3)")
    args = parser.parse_args()
    harness = [sys.executable, "-m", "harness", "check", "--format", "json"]
    with tempfile.TemporaryDirectory() as folder:
        cases = {"harness check GOOD (floor)": [*harness, str(GOOD)]}
        for name, path in {**hostile_files(Path(folder)), "/dev/zero": Path("/dev/zero")}.items():
            size = path.stat().st_size if path.is_file() else 0
            cases[f"{name} ({size / 1024:,.0f} KiB) + GOOD"] = [*harness, str(path), str(GOOD)]
        samples = {label: Sample() for label in cases}
        for _ in range(max(args.repeat, 3)):
            for label, argv in cases.items():
                status = measure_process(argv, samples[label], preexec_fn=limited)
                if status not in (1, 2):
                    raise SystemExit(f"{' '.join(argv)} exited {status}; run it by hand to see why")
        # One more run each, to show what the user reads.
        for label, argv in cases.items():
            files = json.loads(subprocess.run(argv, capture_output=True, text=True, preexec_fn=limited).stdout)["files"]
            assert files[-1]["calls"], f"{label}: the good file was not checked"
            said = files[0]["error"] or "; ".join(files[0]["notes"])
            print(f"{label}: {said[-110:]}")
    floor = samples[next(iter(cases))]
    print(f"\nmin / median / max over {max(args.repeat, 3)} runs, each under RLIMIT_AS = 2,000,000 KiB")
    for label, sample in samples.items():
        print(row(label, sample, None if sample is floor else floor))
    return 0


if __name__ == "__main__":
    sys.exit(main())
