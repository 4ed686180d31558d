"""Group recorded exchanges into calls (retried attempts together) and calls into threads.

A thread is a conversation: a call continues a thread when its `messages` start with the thread's
last request's `messages` and add at least the assistant turn. An explicit thread key, set by the
harness when it ran the agent, wins over that reconstruction.
"""

from __future__ import annotations

import marshal
import re
from typing import Any
from urllib.parse import unquote

from ._model import Call, Exchange, Thread, Trace, is_count, resolve_server_threads
from ._normalize import canonical, content_blocks, normalize, normalize_blocks, normalize_message, resends_history


def build_trace(
    exchanges: list[Exchange],
    source: str,
    *,
    whole_run: bool = False,
    notes: list[str] | None = None,
    harness_calls: bool = False,
) -> Trace:
    """Turn exchanges in recording order into a trace of calls and threads.

    The harness's own calls in a recording (a judge's, a simulated user's: `Exchange.harness_role`)
    are no part of what the agent did: they are left out, and noted. `harness_calls=True` builds
    the trace of those calls alone instead (their cost, in a run's result).
    """
    notes = list(notes or [])
    own = [e for e in exchanges if e.harness_role is not None]
    if harness_calls:
        exchanges = own
    elif own:
        exchanges = [e for e in exchanges if e.harness_role is None]
        counts = {role: sum(1 for e in own if e.harness_role == role) for role in ("judge", "user")}
        said = [f"{n} {'judge' if role == 'judge' else 'simulated-user'}" for role, n in counts.items() if n]
        notes.append(f"{' and '.join(said)} call(s) are the harness's own (header x-harness-role) and were not checked")
    # Each exchange is told apart once: a URL is split and matched for each question asked of it.
    messages_calls = [e for e in exchanges if is_messages_exchange(e)]
    skipped = [e for e in exchanges if not is_messages_exchange(e)] if len(messages_calls) < len(exchanges) else []
    if skipped:
        paths = sorted({f"{e.method} {e.url.split('?', 1)[0]}" for e in skipped})
        notes.append(f"{len(skipped)} exchange(s) are not Messages calls and were not checked: {', '.join(paths)}")
    cloud = [e for e in messages_calls if not e.is_messages_call]
    if cloud:
        notes.append(f"{len(cloud)} exchange(s) are Messages calls through Amazon Bedrock or Google Vertex AI "
                     "(model named in the URL); checked like POST /v1/messages")
        undecoded = [e for e in cloud if e.status == 200 and e.response_body is None and e.raw_response]
        if undecoded:
            # An Amazon event stream of Messages events is read (`_eventstream`); this body is none: cut in its
            # first frame, kept as text (its bytes lost), or a stream of no Messages event (throttled at once).
            notes.append(f"{len(undecoded)} of them answered with a body that is neither JSON nor a whole binary event "
                         "stream: their responses are not checked")
    calls = _group_attempts(messages_calls)
    notes.extend(resolve_server_threads(calls))
    threads = _assign_threads(calls)
    notes.extend(shape_notes(calls))
    return Trace(
        source=source,
        exchanges=exchanges,
        calls=calls,
        threads=threads,
        whole_run=whole_run,
        notes=notes,
    )


# Amazon Bedrock (`/model/{id}/invoke`, `/model/{id}/invoke-with-response-stream`) and Google Vertex AI
# (`.../publishers/anthropic/models/{id}:rawPredict`, `:streamRawPredict`) carry the Messages API's
# own request and response bodies, with the model named in the URL instead of the body.
_CLOUD_MESSAGES_PATH = re.compile(
    r"(?:/model/[^/]+/invoke(?:-with-response-stream)?|/publishers/anthropic/models/[^/:]+:(?:stream)?rawPredict)$",
    re.IGNORECASE,
)


def is_messages_exchange(exchange: Exchange) -> bool:
    """A Messages call: `POST .../v1/messages`, or the same body sent through Bedrock or Vertex AI to a
    Claude model (the model id names Anthropic, or the body carries the `anthropic_version` both clouds
    require of it: an inference profile's ARN names no model). Other models on Bedrock (Amazon Nova)
    take a `messages` list too, in a shape of their own."""
    if exchange.is_messages_call:
        return True
    body = exchange.request_body
    if exchange.method.upper() != "POST" or not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return False
    path = unquote(exchange.url.split("?", 1)[0]).rstrip("/")
    return bool(_CLOUD_MESSAGES_PATH.search(path)) and ("anthropic_version" in body or "anthropic" in path.lower())


def _retry_count(exchange: Exchange) -> int:
    try:
        return int(exchange.request_headers.get("x-stainless-retry-count", "0"))
    except ValueError:
        return 0


def _group_attempts(exchanges: list[Exchange]) -> list[Call]:
    """An exchange that re-sends the body of a call that failed is another attempt of that call.

    The call is the latest one with that body, wherever it is: while one agent waits out a 529's
    back-off, agents running beside it (subagents under Promise.all or asyncio.gather) put their own
    calls between the failed attempt and its retry. Away from its failed attempt, a re-send is a retry
    only when it says so (the SDKs' retry-count header) or answers a failure that asks for one; a 400
    sent again later is the agent's new call, which E002 judges as such.
    """
    calls: list[Call] = []
    # (body length, its end, thread key) -> [(body, the latest call with it)]: bodies are told apart by
    # their length and last characters (where the requests of parallel threads differ), then compared
    # whole. As a dict key each request's text was hashed whole, and each re-sends its thread's
    # history: that hashing cost a tenth of reading the file.
    latest: dict[tuple[int, str, str | None], list[tuple[str, Call]]] = {}
    for exchange in exchanges:
        # A retry re-sends the very same bytes, so the raw body is the cheap key; the parsed bodies
        # are still compared below. Recorders that keep no raw text get the canonical JSON.
        raw = exchange.raw_request
        body = raw if raw is not None else canonical(exchange.request_body)
        sent = latest.setdefault((len(body), body[-64:], exchange.thread_key), [])
        at = next((n for n, (earlier, _) in enumerate(sent) if earlier == body), None)
        previous = sent[at][1] if at is not None else None
        if previous is not None and previous.final.request_body == exchange.request_body and (
            _retry_count(exchange) > 0
            or (not previous.final.ok and (previous is calls[-1] or previous.final.retryable))
        ):
            previous.attempts.append(exchange)
            continue
        call = Call(index=len(calls), thread=0, step=0, attempts=[exchange])
        calls.append(call)
        if at is None:
            sent.append((body, call))
        else:
            sent[at] = (body, call)
    return calls


def _tool_names(request: dict[str, Any]) -> tuple[str, ...]:
    tools = request.get("tools")
    if not isinstance(tools, list):
        return ()
    return tuple(str(t.get("name")) for t in tools if isinstance(t, dict))


def _fingerprint(value: Any) -> str:
    # Request metadata (a moved cache breakpoint, null fields) is not part of what is compared.
    return canonical(normalize(value))


def _opening(call: Call) -> tuple[str, str, tuple[str, ...]] | None:
    """What a thread opens with: its first message and system (`_fingerprint`) and its tools' names."""
    messages = call.messages
    if not messages:
        return None
    return _fingerprint(messages[0]), _fingerprint(call.request.get("system")), _tool_names(call.request)


def _answer_key(content: Any) -> str:
    """A response's content as it is re-sent: the key a continuation is found by."""
    return canonical(normalize_blocks(content_blocks(content)))


_ANSWER_LOOKBACK = 2
"""Trailing assistant messages of a request looked at for the previous response (the last, or the one
before a prefill)."""


class _ThreadIndex:
    """Finds the thread a call continues without comparing it against every thread.

    Each thread is filed under the hash of its last request's whole `messages`; a call looks up
    the hashes of its own prefixes, longest first, so a strict continuation costs O(messages).
    Threads are also filed under the content of their last response: a call that re-sends it as an
    assistant message continues that thread even when the history before it changed (compaction, a
    sliding window, a moved cache breakpoint), and among threads sharing a prefix (parallel runs of
    one prompt) the one whose answer is re-sent wins. Loose continuations (history edited by the
    agent) are looked for only among the most recent threads of the same agent that opened with
    the same message.
    """

    LOOSE_WINDOW = 64

    def __init__(self) -> None:
        self.by_prefix: dict[int, list[Thread]] = {}
        self.by_prefix_but_last: dict[int, list[Thread]] = {}
        """Threads whose last call was refused, by the hash of its messages but the last: a retry that
        appends text to the last user message is found there."""
        self.refused_key: dict[int, int] = {}
        self.by_opening: dict[tuple[str, str, tuple[str, ...]], list[Thread]] = {}
        self.by_answer: dict[str, list[Thread]] = {}
        self.last_prefix: dict[int, int] = {}
        self.last_answer: dict[int, str] = {}
        self.unkeyed: dict[int, tuple[Thread, Call]] = {}
        """Threads whose last response is not yet filed by its answer key: keys are costly (canonical
        JSON of the whole response), and most lookups never need them."""
        self.opening_of: dict[int, tuple[str, str, tuple[str, ...]]] = {}
        self.unopened: list[tuple[Thread, Call]] = []
        """Threads not yet filed by their opening, with the call that opened them: an opening is
        canonical JSON of a first message and a system prompt, and only a loose lookup or a choice
        among threads that share an answer reads them (most recordings need neither)."""
        self.openings: dict[int, tuple[str, str, tuple[str, ...]] | None] = {}
        """The opening of the call being placed (`_opening`), by its index."""
        self.refused = False
        """Some call placed so far was refused: only then can a call retry a refused one."""

    def find(self, calls: list[Call], call: Call, prefix_hashes: list[int]) -> Thread | None:
        messages = call.messages
        retried = self._retried_refusal(calls, call, prefix_hashes)
        if retried is not None:
            return retried
        # prefix_hashes[k] is the hash of messages[:k+1]; a continuation appends at least one message.
        for k in range(len(messages) - 2, -1, -1):
            candidates = self.by_prefix.get(prefix_hashes[k])
            if not candidates:
                continue
            verified = [t for t in candidates if calls[t.calls[-1]].messages == messages[: k + 1]]
            if not verified:
                continue  # hash collisions
            if len(verified) == 1:
                return verified[0]
            appended = messages[k + 1]
            if isinstance(appended, dict) and appended.get("role") == "assistant":
                self._file_answers()
                # Several threads may share this prefix (parallel runs of one prompt): the one whose
                # response is re-sent here is the one continued.
                key = _answer_key(appended.get("content"))
                owner = next((t for t in verified if self.last_answer.get(t.id) == key), None)
                if owner is None:
                    owner = self._answered_by(key, call)
                if owner is not None:
                    return owner
            return verified[0]
        return self._find_by_answer(call) or self._find_loose(calls, call)

    def _retried_refusal(self, calls: list[Call], call: Call, prefix_hashes: list[int]) -> Thread | None:
        """The thread whose refused request this call sends again (unchanged, or with text appended to its
        last user message): a retry of that conversation, not a new one. Other identical openings stay
        apart (parallel runs of one prompt); a retry that appends messages is found as a continuation."""
        if not self.refused:
            return None
        messages = call.messages
        for k in (len(messages) - 1, len(messages) - 2):
            for thread in self.by_prefix.get(prefix_hashes[k], []) if k >= 0 else []:
                last = calls[thread.calls[-1]]
                if last.stop_reason == "refusal" and resends_history(last.messages, messages):
                    return thread
        # Text appended to the last user message changes the last hash: look the thread up by the rest.
        if messages:
            for thread in self.by_prefix_but_last.get(_all_but_last(prefix_hashes), []):
                last = calls[thread.calls[-1]]
                if last.stop_reason == "refusal" and resends_history(last.messages, messages):
                    return thread
        return None

    def _answered_by(self, key: str, call: Call) -> Thread | None:
        """The thread whose last response is `key`, one of the same agent first when several are."""
        self._file_answers()
        threads = self.by_answer.get(key)
        if not threads:
            return None
        opening = self._opening(call)
        self._file_openings()
        same_agent = [t for t in threads if opening is not None
                      and self.opening_of.get(t.id, opening)[1:] == opening[1:]]
        return (same_agent or threads)[-1]

    def _find_by_answer(self, call: Call) -> Thread | None:
        """The thread whose last response this request re-sends, though the history before it changed."""
        messages = call.messages
        seen = 0
        for i in range(len(messages) - 1, -1, -1):
            message = messages[i]
            if not (isinstance(message, dict) and message.get("role") == "assistant"):
                continue
            owner = self._answered_by(_answer_key(message.get("content")), call)
            if owner is not None:
                return owner
            seen += 1
            if seen == _ANSWER_LOOKBACK:
                break
        return None

    def _file_answers(self) -> None:
        """File every thread not yet filed under the content of its last response."""
        for thread, call in self.unkeyed.values():
            response = call.response
            content = response.get("content") if response else None
            # An empty answer (a stream cut before any block) says nothing about who continues it.
            if isinstance(content, list) and content:
                key = _answer_key(content)
                self.by_answer.setdefault(key, []).append(thread)
                self.last_answer[thread.id] = key
        self.unkeyed.clear()

    def _opening(self, call: Call) -> tuple[str, str, tuple[str, ...]] | None:
        # Asked of a call while its thread is looked for, then again when the thread it opens is
        # filed: the fingerprints are canonical JSON of its first message and system, made once.
        if call.index in self.openings:
            return self.openings[call.index]
        opening = _opening(call)
        self.openings = {call.index: opening}
        return opening

    def _file_openings(self) -> None:
        """File every thread not yet filed under its opening, in the order the threads opened."""
        for thread, call in self.unopened:
            opening = self.openings[call.index] if call.index in self.openings else _opening(call)
            if opening is not None:
                self.by_opening.setdefault(opening, []).append(thread)
                self.opening_of[thread.id] = opening
        self.unopened.clear()

    def _find_loose(self, calls: list[Call], call: Call) -> Thread | None:
        if len(call.messages) < 2:
            # A thread's last request holds a message at least, and a loose continuation adds one to
            # it: a thread's first call (most lookups that get here) continues none.
            return None
        opening = self._opening(call)
        if opening is None:
            return None
        self._file_openings()
        best: tuple[int, int, Thread] | None = None
        for thread in self.by_opening.get(opening, [])[-self.LOOSE_WINDOW :]:
            before = calls[thread.calls[-1]].messages
            after = call.messages
            if len(after) <= len(before):
                continue
            appended = after[len(before)]
            if not (isinstance(appended, dict) and appended.get("role") in ("assistant", "user")):
                continue
            ranked = (_common_prefix(before, after), thread.calls[-1])
            if best is None or ranked > best[:2]:
                best = (*ranked, thread)
        return best[2] if best else None

    def add(self, thread: Thread, call: Call, prefix_hashes: list[int], *, new: bool) -> None:
        old = self.last_prefix.get(thread.id)
        if old is not None:
            self.by_prefix[old].remove(thread)
        if prefix_hashes:
            self.by_prefix.setdefault(prefix_hashes[-1], []).append(thread)
            self.last_prefix[thread.id] = prefix_hashes[-1]
        refused = self.refused_key.pop(thread.id, None)
        if refused is not None:
            self.by_prefix_but_last[refused].remove(thread)
        refused = call.stop_reason == "refusal"
        self.refused = self.refused or refused
        if refused and prefix_hashes:
            key = _all_but_last(prefix_hashes)
            self.by_prefix_but_last.setdefault(key, []).append(thread)
            self.refused_key[thread.id] = key
        old_answer = self.last_answer.pop(thread.id, None)
        if old_answer is not None:
            self.by_answer[old_answer].remove(thread)
        self.unkeyed[thread.id] = (thread, call)
        if new:
            self.unopened.append((thread, call))


def _prefix_hashes(messages: list[Any], seen: dict[int, tuple[Any, int]],
                   latest: dict[int, tuple[list[Any], list[int]]]) -> list[int]:
    # A message object re-sent by later requests (a recording shares them, `SharedHistory`) is
    # hashed once: `seen` keeps each object beside its hash, so its id is not reused while the entry
    # lives. The running hashes of a request are those of the latest request that opened with the
    # same message object, as far as both hold the very same objects: each request re-sends its
    # thread's whole history, and hashing it again made the thread's requests cost their square.
    hashes: list[int] = []
    if messages:
        earlier = latest.get(id(messages[0]))
        if earlier is not None and earlier[0][0] is messages[0]:
            before, running_hashes = earlier
            n = 0
            for a, b in zip(before, messages, strict=False):
                if a is not b:
                    break
                n += 1
            hashes = running_hashes[:n]
        latest[id(messages[0])] = (messages, hashes)
    running = hashes[-1] if hashes else 0
    for message in messages[len(hashes):]:
        known = seen.get(id(message))
        if known is None:
            known = seen[id(message)] = (message, _content_hash(message))
        running = hash((running, known[1]))
        hashes.append(running)
    return hashes


def _content_hash(message: Any) -> int:
    """A hash of a message's content. marshal's version 2 (no back-references, so equal values give
    equal bytes) is five times cheaper than repr and twenty than canonical JSON; one client serializes
    a message the same way each time it resends it, and every hash hit is confirmed with == anyway.
    repr for what marshal does not write (a date a YAML body holds)."""
    try:
        return hash(marshal.dumps(message, 2))
    except ValueError:
        return hash(repr(message))


def _all_but_last(prefix_hashes: list[int]) -> int:
    """The hash of all messages but the last (0, where the running hash starts, for none)."""
    return prefix_hashes[-2] if len(prefix_hashes) >= 2 else 0


def _common_prefix(a: list[Any], b: list[Any]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y and normalize_message(x) != normalize_message(y):
            break
        n += 1
    return n


def _assign_threads(calls: list[Call]) -> list[Thread]:
    threads: list[Thread] = []
    by_key: dict[str, Thread] = {}
    index = _ThreadIndex()
    seen: dict[int, tuple[Any, int]] = {}
    latest: dict[int, tuple[list[Any], list[int]]] = {}
    for call in calls:
        key = call.final.thread_key
        hashes = _prefix_hashes(call.messages, seen, latest) if key is None else []
        thread: Thread | None
        if key is not None:
            thread = by_key.get(key)
        else:
            thread = index.find(calls, call, hashes)
        new = thread is None
        if thread is None:
            thread = Thread(id=len(threads) + 1, key=key)
            threads.append(thread)
            if key is not None:
                by_key[key] = thread
                # "coordinator/research-1" is a subagent of "coordinator".
                parent = by_key.get(key.rsplit("/", 1)[0]) if "/" in key else None
                thread.parent = parent.id if parent else None
        thread.calls.append(call.index)
        call.thread = thread.id
        call.step = len(thread.calls)
        if key is None:
            index.add(thread, call, hashes, new=new)
    return threads


_MAX_SHAPE_NOTES = 20


def shape_notes(calls: list[Call]) -> list[str]:
    """What a recording holds in a shape the API never sends or accepts, once per thread.

    The accessors already read such values safely (`Call.content`, `Call.usage`, `content_blocks`),
    and the rules skip what breaks their premise; these notes say what was skipped or read as unknown,
    so a rule staying silent on a malformed turn is not mistaken for a clean bill.
    """
    notes: list[str] = []
    seen: set[tuple[int, str]] = set()
    latest: dict[int, list[Any]] = {}
    """Each thread's latest messages: the very objects a later call re-sends were looked at already."""
    dropped = 0
    for call in calls:
        before = latest.get(call.thread, [])
        latest[call.thread] = call.messages
        for problem in _shape_problems(call, before):
            if (call.thread, problem) in seen:
                continue  # the same history is re-sent on every later call of the thread
            seen.add((call.thread, problem))
            if len(notes) < _MAX_SHAPE_NOTES:
                notes.append(f"{call.where}: {problem}")
            else:
                dropped += 1
    if dropped:
        notes.append(f"... and {dropped} more malformed value(s) of the same kinds")
    return notes


def _shape_problems(call: Call, before: list[Any]) -> list[str]:
    problems: list[str] = []
    request = call.request
    if "messages" in request and not isinstance(request["messages"], list):
        problems.append(f"request messages is {_kind(request['messages'])}, not a list; the request is checked "
                        "as having no messages")
    messages = call.messages
    # The history a call re-sends was looked at with the thread's previous call: an equal message at
    # the same place has the same problems, which that call's notes already hold. Mostly the very
    # same objects (a recording shares them), compared at C speed.
    known = len(before) if len(messages) >= len(before) and messages[:len(before)] == before else 0
    for i in range(known, len(messages)):
        message = messages[i]
        if i < len(before) and before[i] is message:
            continue
        if not isinstance(message, dict):
            problems.append(f"messages[{i}] is {_kind(message)}, not a message object; rules skip it")
            continue
        if message.get("role") not in ("user", "assistant"):
            problems.append(f"messages[{i}] has role {message.get('role')!r:.60}, not user or assistant; "
                            "rules that need a role skip it")
        content = message.get("content")
        if not isinstance(content, str | list):
            problems.append(f"messages[{i}].content is {_kind(content)}, not a string or a list; read as empty")
    response = call.response
    if response is not None:
        if "content" in response and not isinstance(response["content"], list):
            problems.append(f"response content is {_kind(response['content'])}, not a list; read as empty")
        stop_reason = response.get("stop_reason")
        if stop_reason is not None and not isinstance(stop_reason, str):
            problems.append(f"response stop_reason is {_kind(stop_reason)}, not a string; read as unknown")
        usage = response.get("usage")
        # A plain count passes by its type alone: asking every key of every call the long way was a
        # tenth of these notes.
        if isinstance(usage, dict) and not all(type(v) is int and v >= 0 for v in usage.values()):
            odd = sorted(str(k) for k, v in usage.items() if str(k).endswith("_tokens") and not is_count(v))
            if odd:
                problems.append(f"response usage {', '.join(odd)} not a non-negative integer; counted as unknown")
    return problems


def _kind(value: Any) -> str:
    return "null" if value is None else f"a {type(value).__name__}"
