"""The suite must never write into the repository: `harness run` defaults to results/results.jsonl and
reports/latest/ under the working directory, `harness report` to reports/latest/, so a test that
forgets the flags overwrites the report a person is looking at.

Checking the repository's files before and after the session would be slow and racy under xdist;
instead every literal `harness run` / `harness report` argv in tests/ is read with `ast` and must name
its outputs (a computed path, in practice under tmp_path). An argv the parser cannot see through
fails too, so a new test cannot dodge the check by building its argv elsewhere.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent

# command -> flag groups it must carry; one flag of each group.
REQUIRED: dict[str, list[tuple[str, ...]]] = {
    "run": [("--results",), ("--report", "--no-report")],
    "report": [("-o", "--output")],
}
# flags whose value is a path: a string constant there is a relative path, i.e. inside the checkout
PATH_FLAGS = {"--results", "--report", "-o", "--output"}
# A test of the defaults themselves runs in a folder under tmp_path (monkeypatch.chdir) and says so
# on the line of the call, which then needs no output flags.
DEFAULTS_UNDER_TMP = "# cwd is under tmp_path"


def _sources() -> Iterator[Path]:
    for path in sorted(TESTS.rglob("*.py")):
        if "node_modules" not in path.parts:
            yield path


def _module_lists(tree: ast.Module) -> dict[str, ast.List]:
    """Module or function level `name = [...]`, so `main([*base, ...])` can be followed one step."""
    found: dict[str, ast.List] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.List):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node.value
    return found


def _flatten(items: list[ast.expr], lists: dict[str, ast.List], depth: int = 0) -> list[ast.expr]:
    out: list[ast.expr] = []
    for item in items:
        if isinstance(item, ast.Starred) and isinstance(item.value, ast.Name) and item.value.id in lists and depth < 3:
            out.extend(_flatten(lists[item.value.id].elts, lists, depth + 1))
        else:
            out.append(item)
    return out


def _command_argvs(tree: ast.Module) -> Iterator[tuple[int, list[ast.expr] | None]]:
    """(line, argv after the program name) of every CLI invocation; argv None when it is not literal."""
    lists = _module_lists(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            first = node.args[0]
            if name in ("main", "parse_args") and isinstance(first, ast.List):
                yield node.lineno, _flatten(first.elts, lists)
            elif name == "main":
                # parse_args(argv) only parses; main(argv) runs whatever argv holds
                yield node.lineno, None
        if isinstance(node, ast.List):
            # subprocess argv: [..., "-m", "harness", "run", ...] or ["harness", "run", ...]
            values = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            for i, value in enumerate(values[:-1]):
                if value == "harness" and values[i + 1] in REQUIRED:
                    yield node.lineno, _flatten(node.elts[i + 1:], lists)


def problems_in(source: str, where: str) -> list[str]:
    found: list[str] = []
    lines = source.splitlines()
    for line, argv in _command_argvs(ast.parse(source)):
        if argv is None:
            found.append(f"{where}:{line}: argv is not a list literal; cannot check where it writes")
            continue
        if not argv or not isinstance(argv[0], ast.Constant) or argv[0].value not in REQUIRED:
            continue
        command = str(argv[0].value)
        flags = {e.value for e in argv if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        for group in REQUIRED[command]:
            if not flags & set(group) and not lines[line - 1].rstrip().endswith(DEFAULTS_UNDER_TMP):
                found.append(
                    f"{where}:{line}: `harness {command}` without {' or '.join(group)} writes into the checkout")
        for flag, value in zip(argv, argv[1:], strict=False):
            if isinstance(flag, ast.Constant) and flag.value in PATH_FLAGS and isinstance(value, ast.Constant):
                found.append(f"{where}:{line}: {flag.value} {value.value!r} is a path in the checkout; use tmp_path")
    return found


def test_every_cli_run_in_the_tests_writes_under_tmp() -> None:
    found = [p for path in _sources()
             for p in problems_in(path.read_text(encoding="utf-8"), str(path.relative_to(TESTS)))]
    assert not found, "\n".join(found)


def test_the_guard_catches_what_it_is_for() -> None:
    # the guard is only worth something if it fails on the shapes it claims to catch
    bad = '''
main(["run", "scenarios/", "--results", str(tmp)])
main(["run", str(s), "--no-report"])
main(["run", str(s), "--results", "results/x.jsonl", "--no-report"])
main(["report", str(r)])
main(argv)
base = ["run", str(s)]
main([*base, "--results", str(t)])
subprocess.run([sys.executable, "-m", "harness", "run", str(s), "--results", str(t)])
'''
    found = problems_in(bad, "t.py")
    assert [p.split(":")[1] for p in found] == ["2", "3", "4", "5", "6", "8", "9"], found
    good = '''
main(["run", str(s), "--results", str(tmp_path / "r.jsonl"), "--report", str(tmp_path / "rep")])
main(["run", str(s), "--results", str(tmp_path / "r.jsonl"), "--no-report"])
main(["report", str(r), "-o", str(tmp_path / "html")])
main(["check", str(p)])
main(["run", "scenarios", "--no-report"])  # cwd is under tmp_path
'''
    assert problems_in(good, "t.py") == []
