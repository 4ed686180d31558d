"""Read a user's YAML: the one loader behind scenarios, scripts, price files and recordings.

Every file comes back as its data and a line index, and every way it can fail becomes an
`InputError` (or the subclass the caller names) with the file, the line and what was expected.
The work is bounded whatever the file holds:

- `MAX_FILE_BYTES`: a larger file is refused before it is read (and `/dev/zero` is not a file).
- `MAX_NODES`: the document's size with every alias expanded. An alias costs nothing to parse
  but everything after (validation, serialising, walking) sees the expanded tree; a 1 KB "billion
  laughs" expands to billions of nodes. The count is made on the parsed node graph (a recording:
  on libyaml's events as its data is built, `load_recording`), each shared node counted once per
  reference but computed once, so the count itself stays linear.
  Aliases stay allowed: PyYAML (vcrpy's writer) and Psych (Ruby VCR's) both anchor an object that
  appears twice. An alias that refers to its own anchor (a cycle) is refused.
- `MAX_DEPTH`: nesting, counted the same way.
- Integers of more than 4,300 digits (Python's own limit on reading them) are refused with their
  line; an impossible timestamp (`2024-02-30T00:00:00Z`) is kept as the text it is.
"""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml

from .errors import InputError

MAX_FILE_BYTES = 256 * 1024 * 1024
"""Largest file read (256 MB). The largest real recordings seen are tens of megabytes."""

MAX_NODES = 2_000_000
"""Largest document, counted with every alias expanded. A 20 MB cassette with parsed bodies has a few
hundred thousand nodes."""

MAX_DEPTH = 512
"""Deepest nesting. libyaml stops at 1,000 itself; a deep tool schema is about 20 levels."""

MAX_INT_DIGITS = 4300
"""Python refuses to read longer integers (sys.get_int_max_str_digits)."""

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class YamlDocument:
    """A parsed file: its data, and its node tree to find the line of any key."""

    data: Any
    root: yaml.Node | None

    def line_of(self, loc: Loc) -> int | None:
        """1-based line of the deepest entry along `loc` that the file spells out, at its key."""
        return node_line(self.root, loc)

    def index(self) -> dict[Loc, int]:
        """The line of every key and list item by its path (for small files: it walks them all)."""
        lines: dict[Loc, int] = {}
        if self.root is None:
            return lines
        stack: list[tuple[yaml.Node, Loc]] = [(self.root, ())]
        while stack:
            node, loc = stack.pop()
            lines.setdefault(loc, node.start_mark.line + 1)
            if isinstance(node, yaml.MappingNode):
                for key_node, value_node in node.value:
                    key = (*loc, key_node.value) if isinstance(key_node, yaml.ScalarNode) else None
                    if key is not None:
                        lines[key] = key_node.start_mark.line + 1
                        stack.append((value_node, key))
            elif isinstance(node, yaml.SequenceNode):
                stack.extend((item, (*loc, i)) for i, item in enumerate(node.value))
        return lines


def read_text(path: str | Path, *, error: type[InputError] = InputError, what: str = "file") -> str:
    """The text of a regular file of at most MAX_FILE_BYTES, as UTF-8 (a BOM is dropped)."""
    return decode(read_bytes(path, error=error, what=what), str(path), error=error)


def read_bytes(path: str | Path, *, error: type[InputError] = InputError, what: str = "file") -> bytes:
    """The bytes of a regular file, refusing FIFOs, devices and files over MAX_FILE_BYTES unread."""
    name = str(path)
    try:
        # O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever.
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise error(name, f"cannot read the {what} ({exc.strerror or exc})") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(name, f"is {file_kind(info.st_mode)}, not a regular file; not read")
        if info.st_size > MAX_FILE_BYTES:
            raise error(name,
                        f"is {info.st_size / 2**20:.0f} MB, over the {MAX_FILE_BYTES // 2**20} MB limit; not read")
        # os.read, not a file object: building one cost more than reading a small recording.
        chunks: list[bytes] = []
        wanted = MAX_FILE_BYTES + 1
        while wanted > 0:
            chunk = os.read(fd, min(wanted, max(info.st_size + 1, 1 << 16)))
            if not chunk:
                break
            chunks.append(chunk)
            wanted -= len(chunk)
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    except OSError as exc:
        raise error(name, f"cannot read the {what} ({exc.strerror or exc})") from exc
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:  # it grew while being read
        raise error(name, f"is over the {MAX_FILE_BYTES // 2**20} MB limit; not read")
    return data


def file_kind(mode: int) -> str:
    """'a FIFO', 'a character device'...: what a path that is not a regular file is."""
    for test, kind in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


_UTF16_32_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
                  (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"))


def decode(data: bytes, name: str, *, error: type[InputError] = InputError, hint: str = "") -> str:
    """UTF-8 text (a UTF-8 BOM dropped, so line numbers count from the first line as written).

    Anything else is `error` saying what the file looks like instead (UTF-16 from Windows tools,
    Latin-1 from an old editor) and where the first byte that is not UTF-8 sits."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        resave = "; save it as UTF-8"
        for bom, encoding in _UTF16_32_BOMS:
            if data.startswith(bom):
                raise error(name, f"is {encoding} text (it starts with a {encoding} byte order mark), not UTF-8"
                            f"{resave}{hint}", line=1) from exc
        if b"\0" in data[:2] or (len(data) > 3 and data.count(b"\0", 0, 64) * 3 > min(len(data), 64)):
            raise error(name, f"looks like UTF-16 text (NUL bytes between its characters), not UTF-8{resave}{hint}",
                        line=1) from exc
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        byte = data[exc.start]
        latin1 = bytes([byte]).decode("cp1252", errors="replace")
        guess = f", which Latin-1 / Windows-1252 reads as {latin1!r}" if latin1.isprintable() and byte >= 0xA0 else ""
        raise error(name, f"is not UTF-8 text: byte 0x{byte:02x} at column {exc.start - line_start + 1}{guess}"
                    f"{resave}{hint}", line=line) from exc


def parse_yaml(text: str, name: str, *, error: type[InputError] = InputError, recording: bool = False,
               unique_keys: bool = True, hint: str = "") -> YamlDocument:
    """Parse one YAML document within the caps; any failure is `error` naming the file and line.

    `recording`: a file some recorder wrote, in any language: foreign tags (`!ruby/object`,
    `!!python/...`) keep their plain value, and the escapes libyaml refuses are read by the pure
    parser. Otherwise the file is the user's own, and a key given twice is refused (YAML would
    silently keep the last). `hint` ends every message (e.g. the formats expected).
    """
    loaders = (_RecordingLoader, _PureRecordingLoader) if recording else (_UserLoader,)
    for attempt, loader_class in enumerate(loaders):
        try:
            return _load(loader_class, text, name, error, unique_keys, hint)
        except yaml.MarkedYAMLError as exc:
            if attempt + 1 < len(loaders) and "escape" in str(exc.problem):
                continue
            mark = exc.problem_mark or exc.context_mark
            problem = exc.problem or str(exc)
            if exc.context:
                problem = f"{exc.context}, {problem}"
            raise error(name, f"not valid YAML ({problem}){hint}", line=mark.line + 1 if mark else None) from None
        except yaml.YAMLError as exc:
            raise error(name, f"not valid YAML ({exc}){hint}") from None
        except RecursionError:
            raise error(name, f"is nested too deeply to read (over {MAX_DEPTH} levels){hint}") from None
        except InputError:
            raise
        except Exception as exc:  # noqa: BLE001 - PyYAML's constructors raise whatever a value makes them
            # (`!!int` with no digits is an IndexError): each is this file's error, never a traceback.
            raise error(name, f"cannot be read as YAML ({type(exc).__name__}: {exc}){hint}") from None
    raise AssertionError("unreachable: the last loader raises or returns")


def _load(loader_class: type[yaml.SafeLoader], text: str, name: str, error: type[InputError],
          unique_keys: bool, hint: str) -> YamlDocument:
    loader = loader_class(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return YamlDocument(None, None)
        _check_graph(root, name, error, unique_keys, hint)
        return YamlDocument(loader.construct_document(root), root)
    finally:
        loader.dispose()


def _check_graph(root: yaml.Node, name: str, error: type[InputError], unique_keys: bool, hint: str) -> None:
    """Refuse a document whose expanded size or depth is over the caps, a cycle, or a repeated key.

    Post-order over the node graph, each node's expanded size and depth computed once from its
    children's: linear in the nodes written, whatever the aliases expand to.
    """
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool, Loc]] = [(root, False, ())]
    while stack:
        node, children_done, loc = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            children = list(_children(node))
            size[key] = 1 + sum(size[id(c)] for c in children)
            depth[key] = 1 + max((depth[id(c)] for c in children), default=0)
            if size[key] > MAX_NODES:
                raise error(name, f"expands to more than {MAX_NODES:,} nodes through its aliases (`*name`); "
                            f"not read{hint}", line=node.start_mark.line + 1)
            if depth[key] > MAX_DEPTH:
                raise error(name, f"is nested deeper than {MAX_DEPTH} levels; not read{hint}",
                            line=node.start_mark.line + 1)
            continue
        if key in size:
            continue
        if key in open_nodes:
            raise error(name, f"an alias refers to the anchor it is inside of (a cycle); not read{hint}",
                        line=node.start_mark.line + 1)
        open_nodes.add(key)
        if unique_keys and isinstance(node, yaml.MappingNode):
            _refuse_repeated_keys(node, loc, name, error)
        stack.append((node, True, loc))
        stack.extend((item, False, (*loc, step)) for step, item in _steps(node) if id(item) not in size)


def _children(node: yaml.Node) -> Iterator[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            yield key_node
            yield value_node
    elif isinstance(node, yaml.SequenceNode):
        yield from node.value


def _steps(node: yaml.Node) -> Iterator[tuple[str | int, yaml.Node]]:
    """Each child with the step of the path that leads to it (a key's own node sits at its key)."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            step = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
            yield step, key_node
            yield step, value_node
    elif isinstance(node, yaml.SequenceNode):
        yield from enumerate(node.value)


def _refuse_repeated_keys(node: yaml.MappingNode, loc: Loc, name: str, error: type[InputError]) -> None:
    seen: set[str] = set()
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            continue
        if key_node.value in seen:
            raise error(name, "duplicate key; YAML would silently keep only the last one",
                        line=key_node.start_mark.line + 1, key=format_loc((*loc, key_node.value)))
        seen.add(key_node.value)


def format_loc(loc: Iterable[str | int]) -> str:
    """`tools[1].fixture.output`: a path into a document as the user would write it."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


# --- recordings: one pass over libyaml's events ------------------------------------------------


class _Unusual(Exception):
    """A construct the event pass leaves to the node path: a tagged collection (a pickled Python
    object, a Ruby one), a merge key, a key that is a collection, an undefined or repeated anchor,
    more than one document. Rare in a recording; the node path reads each the way it always did."""


_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_PLAIN_TAGS = (None, "!", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")
_MEMO_LIMIT = 65536
"""Plain scalars remembered (keys, methods, status codes, booleans), each read once."""
_MEMO_LENGTH = 64


def load_recording(source: bytes | str, name: str, *, error: type[InputError] = InputError,
                   hint: str = "") -> tuple[Any, dict[Loc, int]]:
    """A recording's data, and the line of each top-level key and of each item of a top-level list
    (`("interactions", 3)`: where an interaction's errors point).

    Within the caps of `parse_yaml`, but in one pass over libyaml's events: no node tree is built
    (it took more memory than the data), the caps are counted as the data is built, and each plain
    scalar (a key, a method, a status) is resolved once per file, or once per process for the texts
    an implicit tag may claim (`_resolved`). What that pass does not handle, it hands to `parse_yaml`,
    which also says what is wrong with a broken file. The node tree for the line of any other key is
    `parse_yaml(..., recording=True).root`, built again when an error needs it.
    """
    if _Fast is not yaml.SafeLoader:
        loader = _RecordingLoader(source)
        try:
            return _load_events(loader, name, error, hint)
        except (_Unusual, yaml.YAMLError):
            pass  # the node path reads it, or says where it is broken
        finally:
            loader.dispose()
    text = source if isinstance(source, str) else decode(source, name, error=error, hint=hint)
    document = parse_yaml(text, name, error=error, recording=True, unique_keys=False, hint=hint)
    lines: dict[Loc, int] = {}
    if isinstance(document.root, yaml.MappingNode):
        for key_node, value_node in document.root.value:
            if isinstance(key_node, yaml.ScalarNode):
                lines[(key_node.value,)] = key_node.start_mark.line + 1
                if isinstance(value_node, yaml.SequenceNode):
                    for i, item in enumerate(value_node.value):
                        lines[(key_node.value, i)] = item.start_mark.line + 1
    return document.data, lines


_NO_KEY: Any = object()
"""What a mapping being built holds as its pending key while it waits for the next one."""


def _load_events(loader: Any, name: str, error: type[InputError], hint: str) -> tuple[Any, dict[Loc, int]]:
    """The document built from libyaml's events, and the lines `load_recording` keeps.

    The collection being built is held in locals (`container`, `is_map`, `key`, ...), the ones around
    it in `stack` as tuples, saved when a collection opens and restored when it ends: most events are
    scalars deep in a body, and each is added to its collection through locals alone.

    The caps are those `_check_graph` applies to the node tree, met at the same event with the same
    line. A collection's expanded size is 1 + what `total` grew by while it was open (each event adds
    the size of its node: 1, or an alias's whole expanded size), so `total` bounds every open
    collection's size and one comparison per event stands for the check of each. Its height is
    1 + its highest child's: a scalar's height is 1, so only collections and aliases raise it while
    open, and a collection with items is at least 2 high when it ends.
    """
    get_event = loader.get_event
    implicit_starts = loader.yaml_implicit_resolvers
    """The implicit tags' resolvers (int, bool, null...) by the first character of the texts they match
    (none is keyed None, for every text: a test holds the loader to it)."""
    scalar_event, alias_event = yaml.ScalarEvent, yaml.AliasEvent
    mapping_start, sequence_start = yaml.MappingStartEvent, yaml.SequenceStartEvent
    end_events = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    document_end = yaml.DocumentEndEvent
    memo: dict[str, Any] = {}
    anchors: dict[str, tuple[Any, int, int]] = {}
    """anchor: (value, expanded size, height)."""
    open_anchors: dict[str, int] = {}
    """anchor of a collection still being built: the line it starts on (an alias to it is a cycle)."""
    lines: dict[Loc, int] = {}
    event = get_event()  # StreamStart
    event = get_event()
    if isinstance(event, yaml.StreamEndEvent):
        return None, lines
    # The collection being built; first, a list that receives the document's root.
    document: list[Any] = []
    container: Any = document
    is_map = False
    key: Any = _NO_KEY
    line = 0
    """The line it starts on."""
    anchor: str | None = None
    loc: Loc | None = None
    """The path of a top-level list or the root mapping, whose items' lines are kept; else None."""
    base = 0
    """`total` when it opened."""
    height = 1
    stack: list[tuple[Any, bool, Any, int, str | None, Loc | None, int, int]] = []
    total = 0
    """The expanded size of every node ended so far."""
    at_line = 0
    """The line of the latest scalar or alias whose line was read: an alias's, and a scalar's in the root
    mapping or a top-level list (elsewhere it is not asked)."""
    while True:
        event = get_event()
        cls = type(event)
        if cls is scalar_event:
            if loc is not None:  # an item of the root mapping or a top-level list: its line is kept
                at_line = event.start_mark.line + 1
                if not is_map:
                    lines[(*loc, len(container))] = at_line
            named = event.anchor
            if named is not None and (named in anchors or named in open_anchors):
                raise _Unusual("an anchor defined twice")
            tag, text = event.tag, event.value
            if tag is None or tag == "!":
                if event.implicit[0]:
                    value = memo.get(text, memo)
                    if value is memo:
                        # A text no implicit tag's resolver starts with (most keys and header values)
                        # is a string, as resolve() would find after a call that cost more than the rest.
                        value = _resolved(loader, event) if text[:1] in implicit_starts else text
                        if len(text) <= _MEMO_LENGTH and len(memo) < _MEMO_LIMIT and type(value) in _MEMO_TYPES:
                            memo[text] = value
                else:
                    value = text
            else:
                value = _construct_scalar(loader, tag, event)
            if named is not None:
                anchors[named] = (value, 1, 1)
            total += 1
            if total >= MAX_NODES and total - base >= MAX_NODES:
                raise _too_many_nodes(error, name, hint, line)
        elif cls is mapping_start or cls is sequence_start:
            if event.tag not in _PLAIN_TAGS:
                raise _Unusual("a tagged collection")
            named = event.anchor
            if named is not None and (named in anchors or named in open_anchors):
                raise _Unusual("an anchor defined twice")
            opened = event.start_mark.line + 1
            if loc is not None and not is_map:
                lines[(*loc, len(container))] = opened
            opens_map = cls is mapping_start
            inner: Loc | None
            if not stack:
                inner = () if opens_map else None
            elif loc == () and isinstance(key, str) and not opens_map:
                inner = (key,)
            else:
                inner = None
            stack.append((container, is_map, key, line, anchor, loc, base, height))
            container, is_map, key, line, anchor, loc, base, height = (
                {} if opens_map else [], opens_map, _NO_KEY, opened, named, inner, total, 1)
            if named is not None:
                open_anchors[named] = opened
            continue
        elif cls in end_events:
            value, ended = container, line
            if height == 1 and value:
                height = 2  # its items were scalars, which left its height as it was
            size, child_height = total - base + 1, height
            if anchor is not None:
                del open_anchors[anchor]
                anchors[anchor] = (value, size, child_height)
            total += 1
            container, is_map, key, line, anchor, loc, base, height = stack.pop()
            if size > MAX_NODES:
                raise _too_many_nodes(error, name, hint, ended)
            if not stack:  # the document's root
                if child_height > MAX_DEPTH:
                    raise _too_deep(error, name, hint, ended)
            else:
                if child_height >= height:
                    height = child_height + 1
                    if height > MAX_DEPTH:
                        raise _too_deep(error, name, hint, line)
                if total >= MAX_NODES and total - base >= MAX_NODES:
                    raise _too_many_nodes(error, name, hint, line)
        elif cls is alias_event:
            at_line = event.start_mark.line + 1
            if loc is not None and not is_map:
                lines[(*loc, len(container))] = at_line
            named = event.anchor
            if named in open_anchors:
                raise error(name, f"an alias refers to the anchor it is inside of (a cycle); not read{hint}",
                            line=open_anchors[named])
            if named not in anchors:
                raise _Unusual("an undefined alias")
            value, size, child_height = anchors[named]
            if size > MAX_NODES:
                raise _too_many_nodes(error, name, hint, at_line)
            total += size
            # The same height and size checks as a collection's end above, written out again: a call in
            # this loop, once per collection, cost about what the loop's rewrite saved.
            if child_height >= height:
                height = child_height + 1
                if height > MAX_DEPTH:
                    raise _too_deep(error, name, hint, line)
            if total >= MAX_NODES and total - base >= MAX_NODES:
                raise _too_many_nodes(error, name, hint, line)
        elif cls is document_end and not stack:
            break
        else:
            raise _Unusual(f"an unexpected {cls.__name__}")
        # `value` is done: it goes into the collection being built.
        if not is_map:
            container.append(value)
        elif key is not _NO_KEY:
            container[key] = value
            key = _NO_KEY
        else:
            if isinstance(value, (dict, list)):
                raise _Unusual("a key that is a collection")
            key = value
            if loc is not None and isinstance(value, str):
                lines[(value,)] = at_line
    if not isinstance(get_event(), yaml.StreamEndEvent):
        raise _Unusual("more than one document")
    return document[0], lines


def _too_many_nodes(error: type[InputError], name: str, hint: str, line: int) -> InputError:
    return error(name, f"expands to more than {MAX_NODES:,} nodes through its aliases (`*name`); not read{hint}",
                 line=line)


def _too_deep(error: type[InputError], name: str, hint: str, line: int) -> InputError:
    return error(name, f"is nested deeper than {MAX_DEPTH} levels; not read{hint}", line=line)


_MEMO_TYPES = frozenset({str, int, float, bool, type(None)})

_RESOLVED: dict[str, Any] = {}
"""Plain scalars an implicit tag's resolver could claim (`200`, `1`, `OK`, `true`), by their text, as
`_resolved` read them: once per process, not once per file. Most recordings spell the same few (a status,
a version), and resolving one cost more than reading the rest of a small file's events. Only values
of `_MEMO_TYPES` are kept: immutable, and a text always resolves to the same one, so one file's reading
leaves nothing another could see change."""
_RESOLVED_LIMIT = 4096
"""Texts `_RESOLVED` keeps, each of at most `_MEMO_LENGTH` characters: under a megabyte for the process."""


def _resolved(loader: Any, event: Any) -> Any:
    """The value of an untagged plain scalar whose text an implicit tag's resolver may claim."""
    text = event.value
    value = _RESOLVED.get(text, _RESOLVED)
    if value is _RESOLVED:
        tag = loader.resolve(yaml.ScalarNode, text, event.implicit)
        if tag == _MERGE_TAG:
            raise _Unusual("a merge key")
        value = text if tag == _STR_TAG else _construct_scalar(loader, tag, event)
        if len(text) <= _MEMO_LENGTH and len(_RESOLVED) < _RESOLVED_LIMIT and type(value) in _MEMO_TYPES:
            _RESOLVED[text] = value
    return value


def _construct_scalar(loader: Any, tag: str, event: Any) -> Any:
    """A tagged or non-string scalar through the loader's own constructors (the caps on integers,
    impossible timestamps kept as text, Psych's `!binary`, foreign tags)."""
    node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.constructed_objects.pop(node, None)


# --- the line of a key -----------------------------------------------------------------------------


def child(node: yaml.Node | None, key: str | int) -> tuple[yaml.Node, yaml.Node] | None:
    """(node naming the entry, its value): the key node for a mapping, the item itself for a list."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if key_node.value == key:
                return key_node, value_node
    elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
        return node.value[key], node.value[key]
    return None


def node_line(node: yaml.Node | None, keys: Loc) -> int | None:
    """1-based line of the deepest existing entry along `keys`, at its key (where an error should point)."""
    if node is None:
        return None
    line = node.start_mark.line
    for key in keys:
        found = child(node, key)
        if found is None:
            break
        line = found[0].start_mark.line
        node = found[1]
    return line + 1


# --- constructors ---------------------------------------------------------------------------------


def _construct_int(loader: yaml.SafeLoader, node: yaml.Node) -> int:
    text = str(cast(yaml.ScalarNode, node).value)
    digits = sum(c.isdigit() for c in text)
    if digits > MAX_INT_DIGITS:
        raise yaml.constructor.ConstructorError(
            None, None, f"an integer of {digits:,} digits (at most {MAX_INT_DIGITS:,} are read)", node.start_mark)
    return yaml.SafeLoader.construct_yaml_int(loader, node)  # type: ignore[arg-type]


def _construct_timestamp(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    # A recorder may write a date that never was; the text is kept, and whoever reads it says so.
    try:
        return yaml.SafeLoader.construct_yaml_timestamp(loader, node)  # type: ignore[arg-type]
    except (ValueError, OverflowError):
        return loader.construct_scalar(cast(yaml.ScalarNode, node))


def _construct_foreign(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    """Ruby's `!ruby/...`, Python's `!!python/...` or any other tag: keep the plain value."""
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(cast(yaml.ScalarNode, node))


def _construct_foreign_multi(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    return _construct_foreign(loader, node)


def _construct_bytesio_body(loader: yaml.SafeLoader, node: yaml.Node) -> bytes:
    """Old vcrpy cassettes pickle a file-like request body as `!!python/object/new:_io.BytesIO`."""
    state = loader.construct_mapping(node, deep=True).get("state") if isinstance(node, yaml.MappingNode) else None
    data = state[0] if isinstance(state, list) and state else b""
    return data.encode("utf-8") if isinstance(data, str) else bytes(data or b"")


def _construct_istr(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    """aiohttp's header names are multidict `istr`s, which vcrpy dumps as a tagged one-item list
    (`? !!python/object/apply:multidict._multidict.istr [Accept]`): the name is that item. Kept as
    the generic foreign tag's list, the key would be unhashable."""
    if isinstance(node, yaml.SequenceNode):
        args: Any = loader.construct_sequence(node, deep=True)
    elif isinstance(node, yaml.MappingNode):  # `object/new` may spell it {args: [Accept]}
        args = loader.construct_mapping(node, deep=True).get("args")
    else:
        args = [loader.construct_scalar(cast(yaml.ScalarNode, node))]
    first = args[0] if isinstance(args, list) and args else ""
    return first.decode("utf-8", "replace") if isinstance(first, bytes) else str(first)


_ISTR_TAGS = tuple(f"tag:yaml.org,2002:python/object/{how}:{module}.istr"
                   for how in ("apply", "new")
                   for module in ("multidict._multidict", "multidict._multidict_py", "multidict"))


def _construct_str_joining_surrogates(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    # Recorders write astral characters as two YAML escapes (\ud83d\udcca); join the pair.
    value = loader.construct_scalar(cast(yaml.ScalarNode, node))
    if any("\ud800" <= c <= "\udfff" for c in value):
        value = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value


_Fast: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UserLoader(_Fast):  # type: ignore[misc,valid-type]
    """A file the user wrote: libyaml when present (it keeps the marks the errors need)."""


class _RecordingLoader(_Fast):  # type: ignore[misc,valid-type]
    """libyaml when present: recordings can be megabytes."""


class _PureRecordingLoader(yaml.SafeLoader):
    """The pure-Python parser accepts the surrogate escapes libyaml rejects."""


for _loader in (_UserLoader, _RecordingLoader, _PureRecordingLoader):
    _loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
    _loader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)
for _loader in (_RecordingLoader, _PureRecordingLoader):
    _loader.add_constructor("!binary", yaml.SafeLoader.construct_yaml_binary)  # type: ignore[type-var]  # Ruby's Psych
    _loader.add_multi_constructor("!", _construct_foreign_multi)
    _loader.add_multi_constructor("tag:yaml.org,2002:python/", _construct_foreign_multi)
    _loader.add_constructor(None, _construct_foreign)
    _loader.add_constructor("tag:yaml.org,2002:python/object/new:_io.BytesIO", _construct_bytesio_body)
    for _tag in _ISTR_TAGS:
        _loader.add_constructor(_tag, _construct_istr)
_PureRecordingLoader.add_constructor("tag:yaml.org,2002:str", _construct_str_joining_surrogates)
if _Fast is yaml.SafeLoader:
    _RecordingLoader.add_constructor("tag:yaml.org,2002:str", _construct_str_joining_surrogates)
