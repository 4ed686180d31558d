"""Commands that go wrong in each way an agent command can: the harness must make each one run's error."""

from __future__ import annotations

import os
import subprocess
import sys
import time

how = sys.argv[1]
if how == "exit":
    print("Traceback (most recent call last):\nValueError: the agent fell over", file=sys.stderr)
    sys.exit(3)
if how == "hang":
    # A grandchild in the same process group, which a kill of the child alone would leave behind.
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print(child.pid, flush=True)
    with open(sys.argv[2], "w") as pid_file:
        pid_file.write(str(child.pid))
    time.sleep(600)
if how == "hang-setsid":
    # A grandchild in a session of its own (setsid): out of the command's process group, so a kill of
    # that group alone leaves it running.
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    with open(sys.argv[2], "w") as pid_file:
        pid_file.write(str(child.pid))
    time.sleep(600)
if how == "daemon":
    # A daemon the classic way: a child in a new session starts it and exits at once, so the daemon's
    # parent is gone and it hangs off no process of the command's; then the command answers and ends.
    start = ("import subprocess, sys; d = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], "
             "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
             "open(sys.argv[1], 'w').write(str(d.pid))")
    subprocess.Popen([sys.executable, "-c", start, sys.argv[2]], start_new_session=True).wait()
    print("started a daemon")
if how in ("leaves-child", "leaves-child-quiet"):
    # Done, but a child it started lives on: one that still holds stdout, or one that let go of it.
    quiet = subprocess.DEVNULL if how == "leaves-child-quiet" else None
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], stdout=quiet, stderr=quiet)
    with open(sys.argv[2], "w") as pid_file:
        pid_file.write(str(child.pid))
    import anthropic

    answer = anthropic.Anthropic().messages.create(model="claude-sonnet-5", max_tokens=8,
                                                   messages=[{"role": "user", "content": "hi"}])
    print(answer.content[0].text, flush=True)
    sys.exit(0)
if how == "abort":
    os.abort()
if how == "garbage":
    sys.stdout.buffer.write(b"\xff\xfe not text\n")
if how == "half-json":
    print('{"outcome": "completed", "text": ')
if how == "bad-outcome":
    print('{"outcome": "finished", "text": "done"}')
if how == "silent":
    pass
if how == "outcome":
    print("thinking out loud first")
    print('{"outcome": "refused", "text": "I will not do that.", "reason": "policy"}')
if how == "wrong-path":
    # An OpenAI-style call first, then the real one: the 404 must be in the run's trace, noted.
    import anthropic
    import httpx2

    print(httpx2.post(os.environ["ANTHROPIC_BASE_URL"] + "/chat/completions", json={}).status_code, file=sys.stderr)
    answer = anthropic.Anthropic().messages.create(model="claude-sonnet-5", max_tokens=8,
                                                   messages=[{"role": "user", "content": "hi"}])
    print(answer.content[0].text)
if how == "flood":
    # 100 MiB on each of stdout and stderr, then the answer: only the last line and a tail matter.
    line = b"x" * (1024 * 1024 - 1) + b"\n"
    for _ in range(100):
        sys.stdout.buffer.write(line)
        sys.stderr.buffer.write(line)
    print("the answer after the flood", flush=True)
if how == "flood-and-fail":
    line = b"noise " * 10_000 + b"\n"
    for _ in range(300):
        sys.stderr.buffer.write(line)
    print("ValueError: the last words", file=sys.stderr)
    sys.exit(3)
if how == "one-long-line":
    sys.stdout.buffer.write(b"y" * (3 * 1024 * 1024))
if how == "misuses-routes":
    # The harness's own routes called wrongly, each answer written down, between two model calls.
    import json

    import anthropic
    import httpx2

    base = os.environ["ANTHROPIC_BASE_URL"]
    model = anthropic.Anthropic()
    asked = model.messages.create(model="claude-sonnet-5", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    tool_use = next(block for block in asked.content if block.type == "tool_use")
    calls = {
        "never issued": ("tools/get_customer", {"customer_id": "C1"}, "toolu_never_issued"),
        "another tool's id": ("tools/process_refund", {"customer_id": "C1"}, tool_use.id),
        "unasked": ("tools/process_refund", {"customer_id": ["C8", "C9"]}, None),
        "unknown tool": ("tools/refund_everything", {}, None),
        "not an object": ("tools/get_customer", ["C1"], None),
        "right": ("tools/get_customer", {"customer_id": "C1"}, tool_use.id),
        "run twice": ("tools/get_customer", {"customer_id": "C1"}, tool_use.id),
        "no user": ("user", {"answer": "done"}, None),
    }
    answers = {}
    for what, (path, body, tool_use_id) in calls.items():
        headers = {"x-harness-tool-use-id": tool_use_id} if tool_use_id else {}
        answer = httpx2.post(f"{base}/harness/{path}", json=body, headers=headers)
        answers[what] = {"status": answer.status_code, "body": answer.json()}
    with open(sys.argv[2], "w") as answers_file:
        json.dump({"tool_use_id": tool_use.id, "answers": answers}, answers_file)
    final = model.messages.create(model="claude-sonnet-5", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    print(final.content[0].text)
if how == "env":
    print(os.environ.get("GREETING", "") + " " + os.path.basename(os.getcwd()))
