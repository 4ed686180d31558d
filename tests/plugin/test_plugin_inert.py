"""The plugin is loaded into every pytest session of an environment that has the harness installed.
A project that does not use it must not pay for it: no import of the heavy parts, no file, no output."""

from __future__ import annotations

import subprocess
import sys

import pytest

# What loading the plugin must not import: each is only needed once a harness feature is asked for.
# harness.results pulls in deepdiff (and pandas when installed), which alone cost about a second.
HEAVY = ("harness.results", "harness.checks", "harness.trace", "harness.transport", "harness.run",
         "harness.report", "deepdiff", "pandas", "anthropic", "pydantic", "yaml", "jinja2")


# A user's own test, in a project that may or may not use the plugin.
PLAIN_TEST = "def test_one():\n    assert sorted([2, 1]) == [1, 2]\n"

def test_loading_the_plugin_imports_none_of_the_heavy_parts() -> None:
    code = (
        "import sys, harness.pytest_plugin\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r} or m.rsplit('.', 1)[0] in {HEAVY!r}"
        f" or any(m.startswith(h + '.') for h in {HEAVY!r})))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"


def test_a_project_that_does_not_use_the_plugin_sees_nothing_of_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user_plain=PLAIN_TEST)

    def files() -> list[str]:
        # pytester's own basetemp (runpytest-N) and captured stdout/stderr, and Python's bytecode caches,
        # are not the plugin's doing
        found = (p.relative_to(pytester.path) for p in pytester.path.rglob("*"))
        return sorted(str(p) for p in found if "__pycache__" not in p.parts
                      and not p.parts[0].startswith("runpytest-") and p.parts[0] not in ("stdout", "stderr"))

    before = files()
    with_plugin = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    without = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:harness")
    with_plugin.assert_outcomes(passed=1)
    without.assert_outcomes(passed=1)
    assert files() == before == ["test_user_plain.py"]

    def shown(lines: list[str]) -> list[str]:
        # the header's plugin list and the timing differ by nature; every other line must not
        return [line for line in lines if not line.startswith("plugins:") and " in " not in line]

    assert shown(with_plugin.outlines) == shown(without.outlines)
    assert "harness" not in "\n".join(shown(with_plugin.outlines))


def test_the_assertion_helpers_do_not_import_pytest() -> None:
    # A project asserting on traces from unittest, or from a script, does not load a test framework.
    code = (
        "import sys, harness\n"
        "harness.assert_no_violations, harness.assert_expectations\n"
        "print('pytest' in sys.modules, '_pytest' in sys.modules)"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "False False"


def test_the_scenario_items_and_the_sharding_are_registered_only_when_asked_for(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "def pytest_sessionfinish(session):\n"
        "    names = sorted(n for n, _ in session.config.pluginmanager.list_name_plugin()\n"
        "                   if n.startswith('harness-'))\n"
        "    print('PARTS', ' '.join(names))\n"
    )
    pytester.makepyfile(test_user_plain=PLAIN_TEST)
    plain = pytester.runpytest("-s")
    assert "PARTS harness-fixtures harness-summary harness-xdist" in plain.stdout.str()
    asked = pytester.runpytest("-s", "--harness-scenarios", "--harness-shard", "1/1")
    assert "PARTS harness-fixtures harness-scenarios harness-shard harness-summary harness-xdist" in asked.stdout.str()
