"""A user's project, made in a temporary directory by `pytester`: scenarios in scripted mode with inline
scripts, and a test module of its own; the plugin is loaded from the installed entry point.

Inner test modules are named `test_user_*`: in-process runs share `sys.modules` with this suite, so a
name like `test_cassette` would be taken for tests/transport/test_cassette.py.
`pytester` itself is enabled by `-p pytester` in the project's addopts: pytest refuses
`pytest_plugins` in a conftest that is not at the top of the run.
"""

from __future__ import annotations

import textwrap

# Imported here, before any in-process pytester run: the plugin no longer imports them when it loads, and
# a module first imported inside a run is dropped from sys.modules when that run ends. C extensions
# cannot be loaded twice: PyYAML's stays bound to the first run's event classes, so the next run that
# writes a cassette fails with "EmitterError: expected SCALAR, SEQUENCE-START, ..."; numpy's (pandas,
# which a run's report uses to compare settings) fails every later comparison of this worker with
# "Unable to import required dependency numpy". The harness's run path is loaded here too: pydantic
# models re-imported by one run would not accept the instances another run's modules built.
import pandas  # noqa: F401
import pytest
import yaml  # noqa: F401

import harness.checks._options  # noqa: F401
import harness.run  # noqa: F401
from harness.checks import rules
from harness.scores import scorers

# The rule and scorer catalogues too, for the same reason: a rule module first imported inside a run is
# dropped with it while the registry it registered into stays (a test module imported the registry), so
# the next run imports it again and its rules are "already registered".
rules()
scorers()

LOOKUP = """\
name: lookup
prompt: Who is customer C1?
mode: scripted
matrix: {efforts: [low, high]}
tools:
- name: get_customer
  input_schema: {type: object, properties: {customer_id: {type: string}}, required: [customer_id]}
  fixture: {output: {customer_id: C1, name: Ana Ruiz}}
expect:
  outcome: completed
  final_text: {contains: Ana}
script:
- tool_use: {name: get_customer, input: {customer_id: C1}}
- text: Ana Ruiz.
"""

# The buggy agent answers only the first of two parallel tool_use blocks: rule T001.
DROPPER = """\
name: dropper
agent: buggy.drops_parallel_results
prompt: Look up customer C1 and order O1.
mode: scripted
tools:
- name: get_customer
  input_schema: {type: object, properties: {customer_id: {type: string}}}
  fixture: {output: {customer_id: C1}}
- name: lookup_order
  input_schema: {type: object, properties: {order_id: {type: string}}}
  fixture: {output: {order_id: O1}}
script:
- tool_use:
  - {name: get_customer, input: {customer_id: C1}}
  - {name: lookup_order, input: {order_id: O1}}
- text: Done.
"""

OWN_TESTS = '''\
import pytest
from harness import assert_expectations, assert_no_violations


@pytest.mark.harness(script=[{"text": "Hello there"}])
def test_scripted(harness_client, harness_trace):
    message = harness_client.messages.create(
        model="claude-sonnet-5", max_tokens=50, messages=[{"role": "user", "content": "hi"}])
    assert message.content[0].text == "Hello there"
    assert_no_violations(harness_trace)
    assert_expectations(harness_trace, max_steps=1, final_text={"contains": "Hello"}, outcome=message.content[0].text)
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """Two scenario files (three runs: lookup x 2 efforts passes, dropper fails with T001) and one own test."""
    scenarios = pytester.mkdir("scenarios")
    (scenarios / "lookup.yaml").write_text(LOOKUP)
    (scenarios / "dropper.yaml").write_text(DROPPER)
    pytester.makepyfile(test_user_own=textwrap.dedent(OWN_TESTS))
    return pytester
