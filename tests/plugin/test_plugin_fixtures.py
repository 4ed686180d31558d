"""A project's own tests: harness_client on a scripted model or a cassette, harness_trace, scripted_model,
and the assertion helpers, each passing and failing for the right reason."""

from __future__ import annotations

import pytest


def test_the_own_test_on_a_scripted_model_passes(project: pytest.Pytester) -> None:
    project.runpytest("test_user_own.py").assert_outcomes(passed=1)


def test_scripted_answers_left_unused_fail_the_test_at_teardown(pytester: pytest.Pytester) -> None:
    pytester.makepyfile('''
        import pytest

        @pytest.mark.harness(script=[{"text": "one"}, {"text": "two"}])
        def test_asks_once(harness_client):
            harness_client.messages.create(model="claude-sonnet-5", max_tokens=10,
                                           messages=[{"role": "user", "content": "hi"}])
    ''')
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*UnplayedInteractions: 1 of 2 scripted responses were not used: step 2*"])


def test_a_failing_test_is_not_also_blamed_for_unused_answers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile('''
        import pytest

        @pytest.mark.harness(script=[{"text": "one"}, {"text": "two"}])
        def test_fails_first(harness_client):
            assert False, "the test's own failure"
    ''')
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    assert "UnplayedInteractions" not in result.stdout.str()


def test_assert_no_violations_names_code_step_and_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile('''
        import pytest
        from harness import assert_no_violations

        SCRIPT = [{"tool_use": {"name": "get_customer", "input": {"customer_id": "C1"}}}, {"text": "Ana."}]
        TOOLS = [{"name": "get_customer", "input_schema": {"type": "object"}}]

        @pytest.mark.harness(script=SCRIPT)
        def test_forgets_the_tool_result(harness_client, harness_trace):
            user = {"role": "user", "content": "Who is C1?"}
            first = harness_client.messages.create(model="claude-sonnet-5", max_tokens=50, tools=TOOLS, messages=[user])
            history = [user, {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                       {"role": "user", "content": "go on"}]
            harness_client.messages.create(model="claude-sonnet-5", max_tokens=50, tools=TOOLS, messages=history)
            assert_no_violations(harness_trace)
    ''')
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*violation(s) in test_assert_no_violations_names_code_step_and_reason.py::*",
                                 "*L002 thread 1, step 2, messages[[]2[]]: step 1 stopped for tool_use "
                                 "* carries no tool_result*"])


def test_assert_expectations_reports_what_happened_and_rejects_unknown_keys(pytester: pytest.Pytester) -> None:
    pytester.makepyfile('''
        import pytest
        from harness import assert_expectations

        @pytest.mark.harness(script=[{"text": "Hello"}])
        def test_expects_more_than_happened(harness_client, harness_trace):
            harness_client.messages.create(model="claude-sonnet-5", max_tokens=10,
                                           messages=[{"role": "user", "content": "hi"}])
            assert_expectations(harness_trace, max_steps=0, outcome="Hello", final_text={"contains": "Bye"})

        @pytest.mark.harness(script=[{"text": "Hello"}])
        def test_typo(harness_client, harness_trace):
            harness_client.messages.create(model="claude-sonnet-5", max_tokens=10,
                                           messages=[{"role": "user", "content": "hi"}])
            with pytest.raises(ValueError, match="valid keys: outcome, "):
                assert_expectations(harness_trace, max_stpes=1)
    ''')
    result = pytester.runpytest()
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*2 expectation(s) not met*", "*expect final_text*Bye*",
                                 "*expect max_steps: 1 model calls, at most 0*"])


def test_scripted_model_factory_checks_every_model_it_made(pytester: pytest.Pytester) -> None:
    pytester.makepyfile('''
        def test_uses_all(scripted_model):
            client = scripted_model([{"text": "a"}]).client()
            reply = client.messages.create(model="claude-sonnet-5", max_tokens=5,
                                           messages=[{"role": "user", "content": "x"}])
            assert reply.content[0].text == "a"

        def test_leaves_one(scripted_model):
            scripted_model([{"text": "a"}])
    ''')
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_leaves_one*", "*1 of 1 scripted responses were not used*"])


RECORD_THEN_REPLAY = '''
    import pytest

    ASK = dict(model="claude-sonnet-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}])

    @pytest.mark.harness(script=[{"text": "recorded answer"}], cassette="cassettes/shared.yaml", record_mode="all")
    def test_a_record(harness_client):
        assert harness_client.messages.create(**ASK).content[0].text == "recorded answer"

    @pytest.mark.harness(cassette="cassettes/shared.yaml")
    def test_b_replay(harness_client, harness_trace):
        assert harness_client.messages.create(**ASK).content[0].text == "recorded answer"
        assert len(harness_trace().calls) == 1
'''


def test_a_cassette_recorded_from_a_scripted_model_is_replayed_offline(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user_cassette=RECORD_THEN_REPLAY)
    result = pytester.runpytest()
    result.assert_outcomes(passed=2)
    assert (pytester.path / "cassettes" / "shared.yaml").is_file()


def test_a_request_the_cassette_does_not_hold_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user_cassette=RECORD_THEN_REPLAY + '''
    @pytest.mark.harness(cassette="cassettes/shared.yaml")
    def test_c_asks_something_else(harness_client):
        harness_client.messages.create(**dict(ASK, max_tokens=11))
''')
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*no recorded interaction matches POST https://api.anthropic.com/v1/messages*",
                                 "*FAILED test_user_cassette.py::test_c_asks_something_else*"])
    # the test's own failure is the one reported, not also the recorded answer it left unplayed
    assert "ERROR test_user_cassette.py::test_c" not in result.stdout.str()


def test_the_default_cassette_is_named_after_module_and_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user_named='''
        def test_needs_a_cassette(harness_client):
            pass
    ''')
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "*ERROR at setup of test_needs_a_cassette*",
        "no cassette at */cassettes/test_user_named/test_needs_a_cassette.yaml (record mode 'none', the default); "
        "record it with `pytest test_user_named.py::test_needs_a_cassette --harness-record-mode=once`*",
        # the short summary leads with the cause, not with the node id it already shows
        "ERROR test_user_named.py::test_needs_a_cassette - Failed: no cassette at*",
    ])
    # a mistake in the test's setup, not in the plugin: the advice is not buried under the plugin's code
    assert "harness/pytest_plugin" not in result.stdout.str()
