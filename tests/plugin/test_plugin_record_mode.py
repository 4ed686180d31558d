"""Record mode precedence: the command line, then the ini file, then the test's marker, then `none`."""

from __future__ import annotations

import pytest

from harness.pytest_plugin import resolve_record_mode


@pytest.mark.parametrize(
    "command_line, ini, marker, expected",
    [
        (None, None, None, "none"),
        (None, None, "all", "all"),
        (None, "once", "all", "once"),
        ("new_episodes", "once", "all", "new_episodes"),
        ("none", None, "all", "none"),
        ("all", None, None, "all"),
    ],
)
def test_first_one_set_wins(command_line: str | None, ini: str | None, marker: str | None, expected: str) -> None:
    assert resolve_record_mode(command_line, ini, marker) == expected


def test_an_unknown_mode_names_where_it_came_from_and_the_choices() -> None:
    with pytest.raises(pytest.UsageError,
                       match=r"harness_record_mode: 'onse' is not a record mode; use one of none, once"):
        resolve_record_mode(None, "onse", "all")


@pytest.mark.parametrize(
    "args, ini, expected",
    [
        ((), None, "all"),
        ((), "once", "once"),
        (("--harness-record-mode=new_episodes",), "once", "new_episodes"),
        (("--harness-record-mode=none",), None, "none"),
    ],
)
def test_the_fixture_applies_the_precedence(
    pytester: pytest.Pytester, args: tuple[str, ...], ini: str | None, expected: str
) -> None:
    if ini is not None:
        pytester.makeini(f"[pytest]\nharness_record_mode = {ini}\n")
    pytester.makepyfile(f'''
        import pytest

        @pytest.mark.harness(record_mode="all")
        def test_marked(harness_record_mode):
            assert harness_record_mode == "{expected}"

        def test_unmarked(harness_record_mode):
            assert harness_record_mode == "{expected if args or ini else "none"}"
    ''')
    pytester.runpytest(*args).assert_outcomes(passed=2)


SCRIPTED_RECORDING = '''
    import pytest

    @pytest.mark.harness(script=[{"text": "hi"}], cassette="cassettes/made.yaml", record_mode="all")
    def test_records(harness_client):
        harness_client.messages.create(model="claude-sonnet-5", max_tokens=5,
                                       messages=[{"role": "user", "content": "x"}])
'''


def test_the_marker_records_unless_the_command_line_says_none(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SCRIPTED_RECORDING)
    pytester.runpytest("--harness-record-mode=none").assert_outcomes(passed=1)
    assert not (pytester.path / "cassettes" / "made.yaml").exists()
    pytester.runpytest().assert_outcomes(passed=1)
    assert (pytester.path / "cassettes" / "made.yaml").is_file()


def test_once_records_a_missing_cassette_from_the_api_and_none_only_replays(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    pytester.makepyfile('''
        import pytest

        @pytest.mark.harness(record_mode="once")
        def test_wants_to_record(harness_client):
            pass
    ''')
    recording = pytester.runpytest()
    recording.assert_outcomes(errors=1)
    recording.stdout.fnmatch_lines([
        "ANTHROPIC_API_KEY is not set, and record mode 'once' (from @pytest.mark.harness(record_mode=...)) would "
        "record */cassettes/test_*/test_wants_to_record.yaml from the live API. Set it to record; or run offline:*"
    ])
    # the advice alone: no plugin traceback, no chained transport exception above it
    assert "During handling" not in recording.stdout.str() and "harness/pytest_plugin" not in recording.stdout.str()
    replaying = pytester.runpytest("--harness-record-mode=none")
    replaying.assert_outcomes(errors=1)
    replaying.stdout.fnmatch_lines(["*no cassette at */test_wants_to_record.yaml*"])


def test_scenario_items_follow_the_session_record_mode(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.cli import main

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    # cassettes of the lookup scenario, recorded from its script the way the shipped ones are made
    assert main(["run", str(project.path / "scenarios" / "lookup.yaml"), "--record",
                 "--results", str(project.path / "recorded.jsonl"), "--no-report"]) == 0
    replay = ("--harness-scenarios", "--harness-mode=replay", "-k", "lookup")
    replayed = project.runpytest(*replay)
    replayed.assert_outcomes(passed=2)
    # The scenario says `mode: scripted`: the session says which mode won, once.
    replayed.stdout.fnmatch_lines(["--harness-mode replay wins over the `mode:` of 1 scenario(s): lookup (scripted); "
                                   "every run is made in mode replay"])
    assert replayed.stdout.str().count("wins over") == 1
    rerecord = project.runpytest(*replay, "--harness-record-mode=all")
    rerecord.assert_outcomes(failed=2)
    rerecord.stdout.fnmatch_lines(["*mode 'record' calls the Anthropic API, and ANTHROPIC_API_KEY is not set*"])
    project.makeini("[pytest]\nharness_record_mode = all\n")
    project.runpytest(*replay, "--harness-record-mode=none").assert_outcomes(passed=2)


SCRIPTED_WITH_CASSETTE = '''
    import pytest

    @pytest.mark.harness(script=[{"text": "from the script"}], cassette="cassettes/made.yaml")
    def test_scripted(harness_client):
        reply = harness_client.messages.create(model="claude-sonnet-5", max_tokens=5,
                                               messages=[{"role": "user", "content": "x"}])
        assert reply.content[0].text == "from the script"
'''


@pytest.mark.parametrize("mode", ["once", "new_episodes", "all"])
def test_a_scripted_test_with_an_existing_cassette_plays_its_script_in_every_record_mode(
    pytester: pytest.Pytester, mode: str
) -> None:
    # The cassette must not answer in the script's place: that left every scripted step unused
    # (UnplayedInteractions at teardown) as soon as the cassette existed, i.e. on every run after the first.
    pytester.makepyfile(test_user_scripted=SCRIPTED_WITH_CASSETTE)
    cassette = pytester.path / "cassettes" / "made.yaml"
    pytester.runpytest(f"--harness-record-mode={mode}").assert_outcomes(passed=1)
    assert cassette.is_file()
    first = cassette.read_text()
    again = pytester.runpytest(f"--harness-record-mode={mode}")
    again.assert_outcomes(passed=1)
    if mode == "once":
        assert cassette.read_text() == first  # `once` never touches an existing cassette
    assert "request:" in cassette.read_text()


def test_a_replay_miss_says_how_to_record_with_pytest(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user_scripted=SCRIPTED_WITH_CASSETTE + '''
    @pytest.mark.harness(cassette="cassettes/made.yaml")
    def test_replays_something_else(harness_client):
        harness_client.messages.create(model="claude-sonnet-5", max_tokens=6,
                                       messages=[{"role": "user", "content": "x"}])
''')
    result = pytester.runpytest("--harness-record-mode=once")
    result.assert_outcomes(passed=1, failed=1)
    # the advice names the command a pytest user types, not the library call open_session(...)
    result.stdout.fnmatch_lines(
        ["*`pytest test_user_scripted.py::test_replays_something_else --harness-record-mode=all`*"]
    )


def test_a_recording_that_would_hold_the_key_is_not_written_at_all(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-ant-api03-" + "k" * 40
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    pytester.makepyfile(test_user_leak='''
        import os, pytest

        @pytest.mark.harness(script=[{"text": "ok"}], cassette="cassettes/leak.yaml", record_mode="all")
        def test_sends_the_key_in_a_prompt(harness_client):
            harness_client.messages.create(model="claude-sonnet-5", max_tokens=5,
                                           messages=[{"role": "user", "content": os.environ["ANTHROPIC_API_KEY"]}])

        @pytest.mark.harness(script=[{"text": "ok"}], cassette="cassettes/clean.yaml", record_mode="all")
        def test_clean(harness_client):
            harness_client.messages.create(model="claude-sonnet-5", max_tokens=5,
                                           messages=[{"role": "user", "content": "hi"}])
    ''')
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*SecretLeak*leak.yaml: not written*"])
    cassettes = pytester.path / "cassettes"
    # nothing of the leaking recording on disk, no temporary file either; the clean one holds no key
    assert sorted(p.name for p in cassettes.iterdir()) == ["clean.yaml"]
    assert key not in (cassettes / "clean.yaml").read_text()


def test_a_misspelt_ini_record_mode_is_one_usage_error_for_the_session(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nharness_record_mode = onse\n")
    pytester.makepyfile(test_user_two='''
        def test_a(harness_record_mode): pass
        def test_b(harness_record_mode): pass
    ''')
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*harness_record_mode: 'onse' is not a record mode; use one of none, once, new_episodes, all*"])
    assert "test_a" not in result.stdout.str()  # said once, before any test, not as an error per test
