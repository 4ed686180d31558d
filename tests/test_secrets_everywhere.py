"""No secret on any output: every byte the harness printed or wrote is searched for the key.

The key (and a second secret the user lists with `--secret NAME`) is spelt as is, in base64 and
URL-encoded, by an agent's error message, a custom header and the model's own answer. The harness
runs as a user runs it, in a subprocess, so the console is what a terminal or a CI log would get.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import textwrap
import urllib.parse
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from harness._console import inert, loggable_target
from harness.cli import main
from harness.trace._scrub import REDACTED, find_secret, redact, scrub_headers, secret_forms

KEY = "sk-ant-api03-Leak_0123456789abcdefABCDEF-zz"
TOKEN = "corp-gateway-Credential-4471-abcd"  # not key-shaped: only --secret makes it one


def spellings(secret: str) -> list[str]:
    """What must appear nowhere: the secret, its URL-encoded forms, and its base64 at any alignment."""
    forms = [secret, urllib.parse.quote(secret, safe="")]
    for prefix in (b"", b"x", b"xy"):
        encoded = base64.b64encode(prefix + secret.encode()).decode()
        forms.append(encoded[4:-4])  # the part that depends on the secret alone
    return forms


def leaks(data: bytes) -> list[str]:
    text = data.decode("utf-8", errors="replace")
    return [form for secret in (KEY, TOKEN) for form in spellings(secret) if form in text]


AGENT = """
import base64, os, urllib.parse

def agent(client, task):
    key, token = os.environ["ANTHROPIC_API_KEY"], os.environ["CORP_TOKEN"]
    b64 = base64.b64encode(key.encode()).decode()
    client.messages.create(model=task.model, max_tokens=64, messages=[{"role": "user", "content": "hi"}],
                           extra_headers={"x-debug-blob": b64, "x-trace": "t=" + token})
    raise RuntimeError(f"auth failed for {key} (base64 {b64}, url {urllib.parse.quote(key, safe='')}, token {token})")
"""

SCENARIO = """name: leaky
prompt: hi
agent: 'leaky_agent:agent'
mode: scripted
expect: {{outcome: completed}}
script:
  - text: "I was told {b64} and {token}"
"""


def test_a_leaking_agent_leaves_no_secret_on_the_console_or_on_disk(tmp_path: Path) -> None:
    (tmp_path / "leaky_agent.py").write_text(AGENT, encoding="utf-8")
    b64 = base64.b64encode(KEY.encode()).decode()
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "leaky.yaml").write_text(SCENARIO.format(b64=b64, token=TOKEN), encoding="utf-8")
    env = {**os.environ, "ANTHROPIC_API_KEY": KEY, "CORP_TOKEN": TOKEN, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", "scenarios", "--record", "--secret", "CORP_TOKEN",
         "--results", str(tmp_path / "results.jsonl"), "--report", str(tmp_path / "report")],
        cwd=tmp_path, env=env, capture_output=True, timeout=120,
    )
    again = subprocess.run(
        [sys.executable, "-m", "harness", "report", str(tmp_path / "results.jsonl"), "-o", str(tmp_path / "again"),
         "--junit", str(tmp_path / "junit.xml"), "--markdown", str(tmp_path / "summary.md")],
        cwd=tmp_path, env=env, capture_output=True, timeout=120,
    )
    printed = done.stdout + done.stderr + again.stdout + again.stderr
    assert b"auth failed for" in printed and REDACTED.encode() in printed, printed  # the line is there, redacted
    assert leaks(printed) == []
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "leaky_agent.py"
               and "scenarios" not in p.parts and "__pycache__" not in p.parts]
    assert any(p.name == "results.jsonl" for p in written)
    for path in written:
        assert leaks(path.read_bytes()) == [], path


def test_every_spelling_of_a_secret_is_redacted() -> None:
    for secret in (KEY, TOKEN):
        texts = [f"a{secret}b", "a=" + urllib.parse.quote(secret, safe="") + "&b",
                 *(base64.b64encode(prefix + secret.encode() + b" tail").decode()
                   for prefix in (b"", b"x", b"xy", b"abc"))]
        for text in texts:
            assert find_secret(text, [KEY, TOKEN]) is not None, text
            assert leaks(redact(text, [KEY, TOKEN]).encode()) == [], text
    assert scrub_headers({"x-blob": base64.b64encode(KEY.encode()).decode()}, [KEY]) == {"x-blob": REDACTED}
    assert len(secret_forms("short")) >= 1 and redact("a short word", ["short"]) == "a short word"


def test_printed_text_is_inert() -> None:
    attack = "tool\x1b[2K\x1b[1A\x1b[2K\rALL GOOD\x9b31m"
    assert inert(attack) == "tool\\x1b[2K\\x1b[1A\\x1b[2K\\x0dALL GOOD\\x9b31m"
    assert inert("two\nlines\tand a tab") == "two\nlines\tand a tab"
    assert loggable_target(f"/v1/messages?key={KEY}") == f"/v1/messages?[query of {len(KEY) + 4} characters not logged]"


def test_the_console_guard_redacts_a_secret_split_across_writes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness._console import guarded_console

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with guarded_console():
        sys.stdout.write(KEY[:20])
        sys.stdout.write(KEY[20:] + " \x1b[1A\n")
    assert capsys.readouterr().out == f"{REDACTED} \\x1b[1A\n"


def test_serve_logs_no_query_string(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text("- text: hi\n", encoding="utf-8")
    server = subprocess.Popen(
        [sys.executable, "-m", "harness", "serve", str(script), "--port", "0", "--exit-when-done"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "ANTHROPIC_API_KEY": KEY},
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().decode().strip().removeprefix("export ANTHROPIC_BASE_URL=")
        import httpx2

        httpx2.post(f"{base_url}/v1/messages?key={KEY}", timeout=30, json={
            "model": "claude-sonnet-5", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]})
        out, err = server.communicate(timeout=60)
    finally:
        server.kill()
    assert b"/v1/messages?[query of" in err, err
    assert leaks(out + err) == []


def test_a_refused_recording_names_the_url_when_the_key_is_in_it(tmp_path: Path) -> None:
    import anthropic
    import httpx2

    from harness.errors import SecretLeak
    from harness.transport import CassetteTransport
    from harness.transport.scripted import ScriptedModel

    model = ScriptedModel([{"text": "hi"}])
    cassette = tmp_path / "c.yaml"
    with model.serve() as base_url:
        recorder = CassetteTransport(cassette, record_mode="all", inner=httpx2.HTTPTransport())
        client = anthropic.Anthropic(api_key="unused-key-0000", base_url=base_url,
                                     http_client=httpx2.Client(transport=recorder), default_query={"key": KEY})
        client.messages.create(model="claude-sonnet-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
        with pytest.raises(SecretLeak) as caught:
            recorder.finish()
    message = str(caught.value)
    assert "interaction #1 request URL" in message and "not in the URL" in message
    assert "bodies are not" not in message and KEY not in message
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written, not even a temp file


def test_stale_temp_files_are_swept_and_fresh_ones_kept(tmp_path: Path) -> None:
    from harness.transport._cassette import sweep_stale_temps_in

    stale, fresh = tmp_path / ".c.yaml.abc12345.tmp", tmp_path / ".c.yaml.def45678.tmp"
    other = tmp_path / ".other.yaml.abc_1234.tmp"
    not_ours = tmp_path / ".notes.txt.abc12345.tmp"  # a temp file, but no cassette's
    # A cassette's name, but not mkstemp's eight characters (a-z, 0-9, _): another tool's file, not a save's.
    foreign = [tmp_path / ".c.yaml.abc123.tmp", tmp_path / ".c.yaml.ABCDEFGH.tmp", tmp_path / ".c.yaml.backup.tmp"]
    for path in (stale, fresh, other, not_ours, *foreign):
        path.write_text("x" * 100)
    for path in (stale, other, not_ours, *foreign):
        os.utime(path, (0, 0))
    assert sorted(sweep_stale_temps_in(tmp_path)) == sorted([stale, other])
    assert not stale.exists() and not other.exists() and fresh.exists() and not_ours.exists()
    assert all(path.exists() for path in foreign)


def test_the_temp_files_a_save_makes_are_the_shape_the_sweep_removes(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # The sweep knows a save's temp file by its name alone: tied here to the names save_cassette really
    # makes, so a change to either cannot leave killed saves' temp files unswept in silence.
    import tempfile

    from vcr.serializers import jsonserializer, yamlserializer

    import harness.transport._cassette as cassette_module

    made: list[str] = []
    real_mkstemp = tempfile.mkstemp

    def recording_mkstemp(*args: Any, **kwargs: Any) -> tuple[int, str]:
        fd, name = real_mkstemp(*args, **kwargs)
        made.append(name)
        return fd, name

    monkeypatch.setattr(cassette_module.tempfile, "mkstemp", recording_mkstemp)
    persister = cassette_module._Persister(lambda: (), lambda: {})
    for name, serializer in [("c.yaml", yamlserializer), ("run 1.yml", yamlserializer), ("d.json", jsonserializer)]:
        for _ in range(20):  # mkstemp's characters are drawn at random: many names, not one
            persister.save_cassette(tmp_path / name, {"requests": [], "responses": []}, serializer)
    assert len(made) == 60
    assert all(cassette_module._ANY_TEMP.fullmatch(Path(name).name) for name in made), made


def test_recording_a_cassette_sweeps_the_stale_temp_files_of_its_folder_first(tmp_path: Path) -> None:
    import httpx2

    from harness.transport import CassetteTransport

    cassette = tmp_path / "c.yaml"
    stale = [tmp_path / ".c.yaml.abc12345.tmp", tmp_path / ".other.json.x_9ab_cd.tmp"]
    fresh, foreign = tmp_path / ".c.yaml.def45678.tmp", tmp_path / ".notes.txt.abc12345.tmp"
    for path in (*stale, fresh, foreign):
        path.write_text("x" * 100)
    for path in (*stale, foreign):
        os.utime(path, (0, 0))
    CassetteTransport(cassette, record_mode="all", inner=httpx2.MockTransport(lambda request: httpx2.Response(200)))
    assert not any(path.exists() for path in stale)
    assert fresh.exists() and foreign.exists()  # a save under way elsewhere; no cassette's temp file


def test_a_sigterm_while_a_cassette_is_saved_leaves_no_temp_file(tmp_path: Path) -> None:
    program = textwrap.dedent(f"""
        import os, signal, sys
        from pathlib import Path
        import harness.transport._cassette as cassette_module
        from harness.transport._cassette import _Persister
        from vcr.serializers import yamlserializer

        real_fdopen = os.fdopen
        class Killing:
            def __init__(self, handle): self.handle = handle
            def __enter__(self): return self
            def __exit__(self, *exc): return self.handle.__exit__(*exc)
            def write(self, data):
                self.handle.write(data[:10])
                os.kill(os.getpid(), signal.SIGTERM)
            def flush(self): self.handle.flush()
            def fileno(self): return self.handle.fileno()
        cassette_module.os.fdopen = lambda *a, **k: Killing(real_fdopen(*a, **k))
        persister = _Persister(lambda: (), lambda: {{}})
        try:
            persister.save_cassette(Path({str(tmp_path / "c.yaml")!r}), {{"requests": [], "responses": []}},
                                    yamlserializer)
        except KeyboardInterrupt:
            sys.exit(0)
        sys.exit(1)
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_pytest_output_and_junitxml_never_show_the_key(pytester: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("CORP_TOKEN", TOKEN)
    pytester.makepyfile(test_user_leaks="""
        import os

        def test_agent_fails_quoting_the_key():
            key = os.environ["ANTHROPIC_API_KEY"]
            print("client made with", key)
            raise RuntimeError(f"auth failed for {key} and {os.environ['CORP_TOKEN']}")
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-secret", "CORP_TOKEN",
                                           "--junitxml", "junit.xml", "-rA")
    result.assert_outcomes(failed=1)
    printed = "\n".join(result.outlines + result.errlines)
    assert "auth failed for [REDACTED] and [REDACTED]" in printed
    assert leaks(printed.encode()) == []
    assert leaks((pytester.path / "junit.xml").read_bytes()) == []


def test_report_ci_files_redact_a_secret_the_results_file_still_holds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The run job did not know the token was a secret, so its results keep it; the report job is told
    # (HARNESS_SECRETS) and must not write it into JUnit, JSON or Markdown, which CI publishes.
    token = "corp-ReportJob-Credential-9931-wxyz"
    scenario = tmp_path / "said.yaml"
    scenario.write_text("name: said\nagent: reference\nprompt: hi\nmode: scripted\n"
                        "expect: {final_text: {contains: never}}\n"
                        f"script:\n  - text: 'the token is {token}'\n", encoding="utf-8")
    results = tmp_path / "results.jsonl"
    monkeypatch.delenv("HARNESS_SECRETS", raising=False)
    assert main(["run", str(scenario), "--results", str(results), "--no-report"]) == 1
    assert token in results.read_text(encoding="utf-8")
    # And a run's error holding it, as one written on a machine that had no such secret would.
    record = json.loads(results.read_text(encoding="utf-8"))
    record.update(status="error", error=f"the gateway answered 401 to {token}")
    results.write_text(json.dumps(record) + "\n", encoding="utf-8")
    monkeypatch.setenv("CORP_TOKEN", token)
    monkeypatch.setenv("HARNESS_SECRETS", "CORP_TOKEN")
    out = tmp_path / "ci"
    files = [out / "junit.xml", out / "summary.json", out / "summary.md"]
    assert main(["report", str(results), "-o", str(out / "html"), "--junit", str(files[0]),
                 "--json", str(files[1]), "--markdown", str(files[2])]) == 0
    for file in files:
        text = file.read_text(encoding="utf-8")
        assert REDACTED in text and not [form for form in spellings(token) if form in text], file
    json.loads(files[1].read_text(encoding="utf-8"))  # still JSON
    ElementTree.parse(files[0])  # still XML


def test_the_report_page_holds_a_secret_in_no_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The page's run list carries each run's words lowercased for its filter: a mixed-case secret in an
    # error or a finding, lowercased before it was redacted, reached index.html as lowercase text.
    import gzip
    import re

    token = "corp-PageJob-Credential-4417-QRST"
    scenario = tmp_path / "said.yaml"
    scenario.write_text("name: said\nagent: reference\nprompt: hi\nmode: scripted\n"
                        f"script:\n  - text: 'the token is {token}'\n", encoding="utf-8")
    results = tmp_path / "results.jsonl"
    monkeypatch.delenv("HARNESS_SECRETS", raising=False)
    main(["run", str(scenario), "--results", str(results), "--no-report"])
    record = json.loads(results.read_text(encoding="utf-8"))
    record.update(status="error", error=f"the gateway answered 401 to {token} and to {KEY}")
    results.write_text(json.dumps(record) + "\n", encoding="utf-8")
    monkeypatch.setenv("CORP_TOKEN", token)
    monkeypatch.setenv("HARNESS_SECRETS", "CORP_TOKEN")
    assert main(["report", str(results), "-o", str(tmp_path / "html")]) == 0
    page = (tmp_path / "html" / "index.html").read_text(encoding="utf-8")
    chunks = [gzip.decompress(base64.b64decode(data)).decode("utf-8")
              for data in re.findall(r'class="run-chunk"[^>]*>([^<]*)<', page)]
    assert chunks  # the run's details, inflated as the page's script inflates them
    for text in [page, *chunks]:
        assert token.lower() not in text.lower() and KEY.lower() not in text.lower()
    assert "the gateway answered 401 to [redacted] and to [redacted]" in page  # its search words, redacted


def _a_run_that_failed_with(tmp_path: Path, error: str) -> Path:
    """A results file of one scripted run, its error replaced by `error` (as a gateway's refusal reads)."""
    scenario = tmp_path / "said.yaml"
    scenario.write_text("name: said\nagent: reference\nprompt: hi\nmode: scripted\nscript:\n  - text: hi\n",
                        encoding="utf-8")
    results = tmp_path / "results.jsonl"
    assert main(["run", str(scenario), "--results", str(results), "--no-report"]) == 0
    record = json.loads(results.read_text(encoding="utf-8"))
    record.update(status="error", error=error)
    results.write_text(json.dumps(record) + "\n", encoding="utf-8")
    return results


def test_a_bearer_token_in_capitals_is_redacted_from_the_report_s_junit_and_markdown(tmp_path: Path) -> None:
    # The scheme's name is case-insensitive (RFC 9110) and the pattern is too: the quick look for it that
    # spares the pattern's scan must not be, or "BEARER <token>" in a run's error reached JUnit and the
    # job summary, and the console, whole.
    token = "gw0Auth2Token.Gateway~Shaped-77"
    results = _a_run_that_failed_with(tmp_path, f"the gateway refused AUTHORIZATION: BEARER {token}")
    junit, markdown = tmp_path / "junit.xml", tmp_path / "summary.md"
    assert main(["report", str(results), "-o", str(tmp_path / "html"), "--junit", str(junit),
                 "--markdown", str(markdown)]) == 0
    for file in (junit, markdown):
        text = file.read_text(encoding="utf-8")
        assert "the gateway refused" in text and token not in text, file
    assert token not in redact(f"Authorization: BEARER {token}", [])


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BeArEr"])
def test_a_bearer_token_is_redacted_from_the_report_s_json_summary_and_page(
        tmp_path: Path, scheme: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # JSON is redacted as JSON (it must stay JSON), which looked for given secrets and key-shaped text
    # only: a gateway's token after "Authorization: Bearer" was blanked in JUnit and Markdown, kept here.
    monkeypatch.delenv("HARNESS_SECRETS", raising=False)
    token = "gw0Auth2Token.Gateway~Shaped-78"
    results = _a_run_that_failed_with(tmp_path, f"the gateway refused\nAuthorization: {scheme} {token}\n(401)")
    summary = tmp_path / "summary.json"
    assert main(["report", str(results), "-o", str(tmp_path / "html"), "--json", str(summary)]) == 0
    written = json.loads(summary.read_text(encoding="utf-8"))
    assert written["runs"][0]["error"] == f"the gateway refused\nAuthorization: Bearer {REDACTED}\n(401)"
    page = (tmp_path / "html" / "index.html").read_text(encoding="utf-8")
    assert "the gateway refused" in page and token not in page
    # The run's details too (its error is shown there), looked for once a chunk as they are packed.
    import gzip
    import re
    [details] = [json.loads(gzip.decompress(base64.b64decode(data)))
                 for data in re.findall(r'class="run-chunk"[^>]*>([^<]*)<', page)]
    assert details[0]["error"] == f"the gateway refused\nAuthorization: Bearer {REDACTED}\n(401)"
    assert token not in redact(f"Authorization: {scheme} {token}", [])


def test_json_redaction_of_bearer_tokens_keeps_json_and_what_holds_none() -> None:
    from harness._secrets import redact_json

    for text in ("no token here", "Bearer short", "bearers of good news", "a \\ backslash\nBearer"):
        kept = json.dumps({"said": text})
        assert redact_json(kept, []) == kept
    for text, left in (("x\nBearer abcdefgh1234\ty", f"x\nBearer {REDACTED}\ty"),
                       ("Bearer\tabcdefgh1234", f"Bearer {REDACTED}"),
                       ("auth=BEARER abcdefgh1234", f"auth=Bearer {REDACTED}")):
        for ascii_only in (True, False):
            assert json.loads(redact_json(json.dumps({"said": text}, ensure_ascii=ascii_only), [])) == {"said": left}


def test_a_bearer_token_in_a_url_is_redacted() -> None:
    # A URL spells the space after the scheme %20 (a tab %09): a token passed in a query, recorded in a
    # request's URL or quoted by an error, was written whole.
    from harness._secrets import redact_json

    for text, left in (("GET /v1/x?auth=Bearer%20abcdefgh1234&y=1", f"GET /v1/x?auth=Bearer {REDACTED}&y=1"),
                       ("auth=bearer%09%20abcdefgh1234", f"auth=Bearer {REDACTED}"),
                       ("Bearer%2abcdefgh1234 and Bearer%20short", "Bearer%2abcdefgh1234 and Bearer%20short")):
        assert redact(text, []) == left
        for ascii_only in (True, False):
            assert json.loads(redact_json(json.dumps({"url": text}, ensure_ascii=ascii_only), [])) == {"url": left}


def test_a_bearer_token_after_an_escaped_space_reaches_no_file_nor_the_console(tmp_path: Path) -> None:
    # Between the scheme and its token a text may hold any whitespace, spelt as its writer escapes it: JSON
    # writes a vertical tab \u000b and a form feed \f, repr (a failed expectation quoting the final text)
    # \x0b, and JSON quoted in JSON again doubles the backslash. Only \n, \t and \r were taken, so each of
    # these tokens was written whole to the results file, the page, JUnit, Markdown and the console.
    tokens = ["vtabToken.abcdefgh1", "formfeedToken.abcdefgh2", "nbspToken.abcdefgh3"]
    scenario = tmp_path / "bearer.yaml"
    scenario.write_text(textwrap.dedent(f"""\
        name: bearer
        agent: reference
        prompt: hi
        mode: scripted
        tools:
          - name: t
            input_schema: {{type: object}}
            fixture: {{output: "Bearer\\v{tokens[0]} Bearer\\f{tokens[1]}"}}
        script:
          - tool_use: {{name: t, input: {{}}}}
          - text: "done: Bearer\\v{tokens[0]}, Bearer\\f{tokens[1]}, Bearer\\_{tokens[2]}"
        expect: {{final_text: {{contains: not said}}}}
        """), encoding="utf-8")
    results, html = tmp_path / "results.jsonl", tmp_path / "html"
    junit, markdown, summary = tmp_path / "junit.xml", tmp_path / "summary.md", tmp_path / "summary.json"
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_SECRETS"}
    said = subprocess.run(
        [sys.executable, "-m", "harness", "run", str(scenario), "--results", str(results), "--report", str(html)],
        capture_output=True, env=env, cwd=tmp_path, check=False)
    assert said.returncode == 1, said.stderr  # the expectation failed, quoting the final text
    reported = subprocess.run(
        [sys.executable, "-m", "harness", "report", str(results), "-o", str(html), "--junit", str(junit),
         "--markdown", str(markdown), "--json", str(summary)], capture_output=True, env=env, check=False)
    assert reported.returncode == 0, reported.stderr
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != scenario]
    assert {results, junit, markdown, summary, html / "index.html"} <= set(written)
    for name, data in [("console", said.stdout + said.stderr + reported.stdout + reported.stderr),
                       *((str(p), p.read_bytes()) for p in written)]:
        for token in tokens:
            assert token.encode() not in data, (name, token)
    assert f"Bearer {REDACTED}" in results.read_text(encoding="utf-8")
    json.loads(results.read_text(encoding="utf-8"))  # still JSON


def test_a_named_secret_too_short_to_be_redacted_is_said_never_its_value(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # A value under 8 characters is not looked for (it would match ordinary text), so `--secret PIN` with
    # a 6-character value was printed and written whole, with nothing said: the user trusted a redaction.
    monkeypatch.setenv("SHORT_PIN", "4711ab")
    monkeypatch.setenv("SHORT_TOO", "x9y8z7")
    monkeypatch.setenv("HARNESS_SECRETS", "SHORT_TOO")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")  # a test run's dummy key: no secret, nothing said
    assert main(["rules", "--secret", "SHORT_PIN"]) == 0
    err = capsys.readouterr().err
    for name in ("SHORT_PIN", "SHORT_TOO"):
        assert (f"harness: warning: the value of {name} (named a secret) is shorter than 8 characters: too "
                "short to be told from ordinary text, it is not redacted") in err
    assert "4711ab" not in err and "x9y8z7" not in err and "ANTHROPIC_API_KEY" not in err


def test_a_harness_secret_too_short_to_be_redacted_is_said_under_pytest_too(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # `--harness-secret NAME` is `--secret NAME` under pytest (README): a value under 8 characters is not
    # looked for there either, and the plugin said nothing of it while the command line warned.
    monkeypatch.setenv("SHORT_PIN", "4711ab")
    monkeypatch.setenv("HARNESS_SECRETS", "SHORT_TOO")
    monkeypatch.setenv("SHORT_TOO", "x9y8z7")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")  # a test run's dummy key: no secret, nothing said
    pytester.makepyfile(test_nothing="def test_passes():\n    pass\n")
    # Said in the session's harness section, not as a pytest warning: `-W error` made that an INTERNALERROR.
    for strict in ((), ("-W", "error")):
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-secret", "SHORT_PIN",
                                               "--harness-secret", "NOT_SET_ANYWHERE", *strict)
        result.assert_outcomes(passed=1)
        printed = "\n".join(result.outlines + result.errlines)
        for name in ("SHORT_PIN", "SHORT_TOO"):
            assert (f"warning: the value of {name} (named a secret) is shorter than 8 characters: too short to "
                    "be told from ordinary text, it is not redacted") in printed
        assert ("warning: NOT_SET_ANYWHERE (named a secret) is not set or is empty: nothing is redacted for it; "
                "is the name right?") in printed
        assert "4711ab" not in printed and "x9y8z7" not in printed and "ANTHROPIC_API_KEY" not in printed


def test_a_named_secret_not_set_is_said(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # `--secret ANTROPIC_KEY` (misspelt), or HARNESS_SECRETS naming a variable this CI job lacks: nothing was
    # looked for and nothing said, while results made where it was set, reported here, may hold its value.
    monkeypatch.delenv("MISSPELT_KEY", raising=False)
    monkeypatch.setenv("BLANK_TOKEN", "  ")
    monkeypatch.setenv("HARNESS_SECRETS", "BLANK_TOKEN")
    monkeypatch.setenv("SET_TOKEN", "a-long-enough-value")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)  # the environment's own: a replay needs none
    assert main(["rules", "--secret", "MISSPELT_KEY", "--secret", "SET_TOKEN"]) == 0
    err = capsys.readouterr().err
    for name in ("MISSPELT_KEY", "BLANK_TOKEN"):
        assert (f"harness: warning: {name} (named a secret) is not set or is empty: nothing is redacted for it; "
                "is the name right?") in err
    assert "SET_TOKEN" not in err and "ANTHROPIC_AUTH_TOKEN" not in err and "a-long-enough-value" not in err


def test_a_backspace_before_earer_leaves_the_results_line_json(tmp_path: Path) -> None:
    # JSON writes a backspace as \b: "<BS>earer <token>" in a model's words is `\bearer <token>` in its line,
    # and the scheme, matched in any case from that "b", was written back as "Bearer": `\Bearer` is no JSON
    # escape, so the results line, and with it every report of the file, could no longer be read.
    from harness._secrets import redact_json

    for text in ("\bearer abcdefgh1234", "x \\\bearer\u000babcdefgh1234", "\bBEARER abcdefgh1234"):
        for ascii_only in (True, False):
            line = json.dumps({"said": text}, ensure_ascii=ascii_only)
            said = json.loads(redact_json(line, []))["said"]
            assert "abcdefgh1234" not in said and said.endswith(REDACTED), (line, said)
            quoted = json.dumps({"line": line})  # JSON in JSON: the escape's backslash doubled
            assert "abcdefgh1234" not in json.loads(json.loads(redact_json(quoted, []))["line"])["said"]
    scenario = tmp_path / "backspace.yaml"
    scenario.write_text('name: backspace\nagent: reference\nprompt: hi\nmode: scripted\n'
                        'script:\n  - text: "said \\bearer abcdefgh1234"\n', encoding="utf-8")
    results = tmp_path / "results.jsonl"
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_SECRETS"}
    made = subprocess.run([sys.executable, "-m", "harness", "run", str(scenario), "--results", str(results),
                           "--no-report"], capture_output=True, env=env, cwd=tmp_path, check=False)
    assert made.returncode == 0, made.stderr
    assert json.loads(results.read_text(encoding="utf-8"))["status"] == "passed"
    reported = subprocess.run([sys.executable, "-m", "harness", "report", str(results), "-o", str(tmp_path / "html")],
                              capture_output=True, env=env, cwd=tmp_path, check=False)
    assert reported.returncode == 0, reported.stderr
    assert b"abcdefgh1234" not in results.read_bytes() + (tmp_path / "html" / "index.html").read_bytes()
