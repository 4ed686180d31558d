"""Virtualenvs of their own for the tests that need another SDK version or an agent framework.

Each is built once with pip, from the registry, and reused while what it was built from is the
same: the harness's declared dependencies, the extra requirements and this Python. They live in
.venv-examples/ at the repository's root (ignored by git). Either the harness is installed there as
a user would (`pip install -e` of this checkout, together with the requirements), or, for the
examples, only its dependencies are, resolved together with the framework's in one install, and a
`.pth` file puts this checkout on the path: an editable install writes into the checkout, which
venvs built side by side must not do at once. Either way editing the harness needs no rebuild.

A venv that pip cannot build because the registry does not serve a package skips its tests with
pip's words; any other failure (a real conflict of versions) fails them.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".venv-examples"
PIP_TIMEOUT_S = 900.0
# What pip says when the registry cannot serve a package (absent, yanked, no wheel for this
# Python, or no network to it): the only reasons a venv's tests skip instead of failing.
UNSERVED = (
    "No matching distribution found",
    "Could not find a version that satisfies",
    "Max retries exceeded",
    "NewConnectionError",
    "Temporary failure in name resolution",
    "Network is unreachable",
)


def harness_requirements() -> list[str]:
    """The harness's own dependencies, as pyproject.toml declares them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return list(project["dependencies"])


def _key(requirements: Sequence[str]) -> str:
    what = json.dumps([harness_requirements(), list(requirements), sys.version], sort_keys=True)
    return hashlib.sha256(what.encode()).hexdigest()[:12]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One builder per venv across xdist workers: the others wait, then reuse what it built."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _lower_priority() -> None:
    os.nice(10)


@contextmanager
def _unlocked() -> Iterator[None]:
    yield


class Venv:
    """A built virtualenv: its python, and how long it took to build (0 when it was reused)."""

    def __init__(self, home: Path, built_in_s: float) -> None:
        self.home = home
        self.built_in_s = built_in_s

    @property
    def python(self) -> Path:
        return self.home / "bin" / "python"

    def run(self, *args: str | Path, cwd: Path, timeout: float = 300.0, env: dict[str, str] | None = None,
            ) -> subprocess.CompletedProcess[str]:
        """Run this venv's python with `args`, its environment free of the outer venv's."""
        environ = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
        environ.update(env or {})
        return subprocess.run([str(self.python), *map(str, args)], cwd=cwd, env=environ, capture_output=True,
                              text=True, timeout=timeout)


def venv(name: str, requirements: Sequence[str], *, pip_install_harness: bool = False) -> Venv:
    """The venv `name` with the harness (or its dependencies) and `requirements`, built if missing or stale.

    Skips the calling test when the registry cannot serve what it needs.
    """
    home = CACHE / f"{name}-{_key([*requirements, f'pip install -e: {pip_install_harness}'])}"
    failed = home.with_suffix(".unserved")
    with _locked(CACHE / f"{name}.lock"):
        if (home / "ready").is_file():
            return Venv(home, 0.0)
        if failed.is_file():
            pytest.skip(failed.read_text(encoding="utf-8"))
        for stale in CACHE.glob(f"{name}-*"):
            shutil.rmtree(stale, ignore_errors=True) if stale.is_dir() else stale.unlink()
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-m", "venv", str(home)], check=True, capture_output=True)
        harness = ["-e", str(ROOT)] if pip_install_harness else harness_requirements()
        with _locked(CACHE / "checkout.lock") if pip_install_harness else _unlocked():
            # Niced, and without byte-compiling every module it unpacks: the builds run beside the
            # rest of the suite, whose tests must not starve for the two cores.
            pip = subprocess.run(
                [str(home / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                 "--no-compile", *harness, *requirements],
                capture_output=True, text=True, timeout=PIP_TIMEOUT_S, preexec_fn=_lower_priority,
            )
        if pip.returncode != 0:
            said = "\n".join(line for line in pip.stderr.splitlines() if "is ignored" not in line)
            if any(reason in said for reason in UNSERVED):
                reason = f"the registry cannot serve {', '.join(requirements)} for venv {name}: {said[-600:]}"
                shutil.rmtree(home, ignore_errors=True)
                failed.write_text(reason, encoding="utf-8")
                pytest.skip(reason)
            shutil.rmtree(home, ignore_errors=True)
            pytest.fail(f"pip could not build venv {name} ({' '.join(requirements)}):\n{said[-3000:]}")
        if not pip_install_harness:
            site = subprocess.run(
                [str(home / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                check=True, capture_output=True, text=True,
            ).stdout.strip()
            (Path(site) / "harness-checkout.pth").write_text(f"{ROOT}\n", encoding="utf-8")
        built_in = time.monotonic() - t0
        (home / "ready").write_text(f"built in {built_in:.1f}s\n", encoding="utf-8")
        return Venv(home, built_in)


EXAMPLES_DIR = ROOT / "examples"
EXAMPLES = sorted(p.name for p in EXAMPLES_DIR.iterdir() if p.is_dir())


def example_requirements(example: str) -> list[str]:
    """The pinned packages an example needs beyond the harness (its requirements.txt), if any."""
    path = EXAMPLES_DIR / example / "requirements.txt"
    if not path.is_file():
        return []
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
            and not line.startswith("#")]
