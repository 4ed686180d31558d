"""What a user imports from `harness` is there, and checking a recording does not load the SDK."""

from __future__ import annotations

import subprocess
import sys

import harness


def test_every_public_name_resolves_to_the_object_of_its_home_module() -> None:
    from harness import agents, checks, errors, trace, transport
    from harness.transport import scripted

    homes = {
        "Limits": agents, "Task": agents, "ToolError": agents, "ToolResult": agents,
        "CheckContext": checks, "Finding": checks, "check_trace": checks, "rule": checks,
        "HarnessError": errors, "Outcome": trace, "Trace": trace, "load_trace": trace,
        "Session": transport, "open_session": transport, "ScriptedModel": scripted,
    }
    for name in harness.__all__:
        value = getattr(harness, name)
        if name in homes:
            assert value is getattr(homes[name], name), name
    assert set(homes) <= set(harness.__all__)


def test_checking_a_recording_through_harness_does_not_import_the_sdk() -> None:
    code = (
        "import sys, harness\n"
        "harness.load_trace, harness.check_trace, harness.rule, harness.Finding, harness.HarnessError\n"
        "print('anthropic' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_the_lazy_packages_list_their_public_names_literally() -> None:
    from harness import report, results, scores, trace, transport

    for package in (harness, report, results, scores, trace, transport):
        assert package.__all__ == sorted(package._EXPORTS), package.__name__  # type: ignore[attr-defined]


def test_the_lazy_packages_show_their_names_to_dir_and_help() -> None:
    # In a fresh interpreter: a name imported once is in the package's namespace, and shown anyway.
    code = (
        "import importlib, pydoc, sys\n"
        "for name in sys.argv[1:]:\n"
        "    package = importlib.import_module(name)\n"
        "    listed = dir(package)\n"
        "    missing = [n for n in package.__all__ if n not in listed]\n"
        "    assert not missing, (name, missing)\n"
        "    text = pydoc.render_doc(package, renderer=pydoc.plaintext)\n"
        "    unseen = [n for n in package.__all__ if n not in text]\n"
        "    assert not unseen, (name, unseen)\n"
    )
    packages = ["harness.trace", "harness.results", "harness.scores", "harness.report", "harness.transport"]
    subprocess.run([sys.executable, "-c", code, *packages], check=True)


def test_a_lazy_package_gives_its_submodules_as_attributes() -> None:
    # `import harness.trace` then `harness.trace.formats`: worked while the package's __init__ imported
    # every name (and so its submodules); each in a fresh interpreter, nothing imported before.
    code = (
        "import importlib, sys\n"
        "package, sub = sys.argv[1:]\n"
        "module = importlib.import_module(package)\n"
        "assert getattr(module, sub) is importlib.import_module(f'{package}.{sub}')\n"
        "try:\n"
        "    module.no_such_name\n"
        "except AttributeError as exc:\n"
        "    assert str(exc) == f\"module {package!r} has no attribute 'no_such_name'\", exc\n"
        "else:\n"
        "    raise AssertionError('no AttributeError')\n"
    )
    for package, sub in [("harness.trace", "formats"), ("harness.results", "_store"), ("harness.scores", "_model"),
                         ("harness.report", "_ci")]:
        subprocess.run([sys.executable, "-c", code, package, sub], check=True)
