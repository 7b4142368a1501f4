"""Runs every grpcurl block of the docs against a real accelschedd and checks each answer.

A tour is a ```sh block of README.md or of a page under docs/ that holds a grpcurl command:
every admin task the docs show is one, and a block that cannot be run as a tour fails the
test. Each tour gets a server of its own (env ACCELSCHEDD) on a fresh SQLite file; every
command in it is run, in order, with the real grpcurl (env GRPCURL), `localhost:50051`
replaced by the server's address. A tour whose first line is `build/accelschedd FLAGS &`
runs its server with those flags (the test sets --db, --listen and --metrics_listen).
scripts/grpcurl_test.sh installs the pinned grpcurl and runs this.

Each command must be followed, on the next line(s), by its expected answer: a comment
`# → ITEM, ITEM, ...`. A command without one fails the test. Items:

  "key": VALUE      some object in the JSON answer has `key` equal to VALUE (JSON). A
                    proto3 default VALUE (false, 0, "0", "", [], {}) is checked on the
                    top-level message only, where grpcurl leaves it out: absent or equal.
  {"k": V, ...}     some object in the answer holds all of these pairs (defaults as above).
  {}                the answer is the empty message.
  Code: NAME        the call fails with this gRPC status (grpcurl exits 64 + code).
  Message: TEXT     (after Code:) the status message contains TEXT; runs to the line's end.
  anything else     a line of grpcurl's text output (for `list` and `describe`).

`A then B` splits the expectation of a stream: one group of items per message, in order,
and exactly that many messages. A unary answer has one group.

A command ending in `&` (a WatchEvents in the background) is started, the test waits
until the server counts its stream (accelsched_watchers on /metrics) and goes on; after
the last command it must have printed exactly its expected events. The test then stops
the server, which ends such streams with UNAVAILABLE (docs/operations/flags.md).

Placeholders: `localhost:50051` (the server's address) and `ALLOCATION_ID` (the top-level
"id" of the answer of the command before; it is replaced in expectations too).
"""

from __future__ import annotations

import codecs
import dataclasses
import json
import os
import pathlib
import queue
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
import urllib.request

import pytest

SOURCE_DIR = pathlib.Path(
    os.environ.get("ACCELSCHED_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
README = SOURCE_DIR / "README.md"
PROTO = SOURCE_DIR / "proto" / "accelsched" / "v1" / "accelsched.proto"
SERVER = "build/accelschedd"
# The flags a tour may not set: the test gives each server its own file and ports.
TEST_FLAGS = ("--db", "--listen", "--metrics_listen")
DOCS_ADDRESS = "localhost:50051"
ALLOCATION_ID = "ALLOCATION_ID"
ARROW = "# →"

GRPC_CODES = {
    name: number for number, name in enumerate(
        ["OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
         "AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
         "Aborted", "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss",
         "Unauthenticated"])
}
COMMAND_TIMEOUT_S = 60
WAIT_TIMEOUT_S = 30


class TourError(Exception):
    """A grpcurl block of the docs cannot be read as this test reads it."""


# ---------------------------------------------------------------------------------------
# Reading the tour


@dataclasses.dataclass
class Item:
    kind: str  # pair, object, empty, code, message, line
    key: str | None = None
    value: object = None


@dataclasses.dataclass
class Tour:
    page: str  # the page's path in the repository
    line: int  # the page's line of the block's first line
    lines: list[str]
    flags: list[str] = dataclasses.field(default_factory=list)  # the server's own

    def id(self) -> str:
        return f"{self.page}:{self.line}"


@dataclasses.dataclass
class Command:
    index: int  # 1-based, in the tour's order
    page: str
    line: int  # the page's line of its first line
    text: str  # continuation lines joined, comments stripped
    argv: list[str]
    background: bool
    expectation: str = ""  # the text after `# →`, lines joined
    groups: list[list[Item]] = dataclasses.field(default_factory=list)

    @property
    def name(self) -> str:
        """`list`, `describe`, or the RPC's method name."""
        address = self.argv.index(DOCS_ADDRESS)
        target = self.argv[address + 1]
        return target if target in ("list", "describe") else target.rsplit("/", 1)[-1]

    def where(self) -> str:
        return f"tour command {self.index} ({self.page}:{self.line}, {self.name})"


def tours(text: str, page: str) -> list[Tour]:
    """Every ```sh block of the page that holds a grpcurl command, in order."""
    lines = text.splitlines()
    found = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```sh":
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        if j == len(lines):
            raise TourError(f"{page}:{i + 1}: a ```sh block that is not closed")
        block = lines[i + 1:j]
        if any(line.lstrip().startswith("grpcurl ") for line in block):
            tour = Tour(page, i + 2, block)
            first = block[0].strip() if block else ""
            if first.startswith(SERVER + " "):
                argv = shlex.split(first)
                if argv[-1] != "&":
                    raise TourError(f"{page}:{i + 2}: a server line must end with &: {first}")
                tour.flags = argv[1:-1]
                for flag in tour.flags:
                    if flag.split("=", 1)[0] in TEST_FLAGS:
                        raise TourError(f"{page}:{i + 2}: a tour sets no {flag.split('=')[0]}")
                tour.line += 1
                tour.lines = block[1:]
            found.append(tour)
        i = j + 1
    return found


def untested_grpcurl_blocks(text: str, page: str) -> list[str]:
    """Code blocks not fenced as ```sh that hold a grpcurl command: the tours would skip them."""
    found, fence = [], None
    for n, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = None if fence is not None else (n, stripped[3:].strip())
        elif fence is not None and fence[1] != "sh" and stripped.startswith("grpcurl "):
            found.append(f"{page}:{fence[0]}: a ```{fence[1]} block with a grpcurl command "
                         f"(fence it as ```sh so that it runs)")
    return found


def doc_pages() -> list[pathlib.Path]:
    """README.md and every page under docs/."""
    return [README] + sorted((SOURCE_DIR / "docs").rglob("*.md"))


def all_tours() -> list[Tour]:
    found = []
    for page in doc_pages():
        found += tours(page.read_text(), page.relative_to(SOURCE_DIR).as_posix())
    return found


def _scan(line: str, quote: str | None) -> tuple[str, str | None, str | None]:
    """Shell-scans one line from inside `quote` (None, "'" or '"').

    Returns (code, comment, quote at its end): the line without a comment that starts
    at a word outside quotes, that comment (without "#") or None, and the open quote.
    """
    i = 0
    while i < len(line):
        c = line[i]
        if quote == "'":
            if c == "'":
                quote = None
        elif quote == '"':
            if c == "\\":
                i += 1
            elif c == '"':
                quote = None
        elif c == "\\":
            i += 1
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i], line[i + 1:], None
        i += 1
    return line, None, quote


def parse_tour(tour: Tour) -> list[Command]:
    """Every command of the tour, in order, each with its parsed expectation."""
    page, first_line, lines = tour.page, tour.line, tour.lines
    commands: list[Command] = []
    pending: list[str] = []  # lines of a command still open (quote or backslash)
    pending_line = 0
    quote = None
    last: Command | None = None  # the command an expectation line may follow
    for n, raw in enumerate(lines, start=first_line):
        if not pending:
            stripped = raw.strip()
            if stripped.startswith(ARROW):
                if last is None:
                    raise TourError(f"{page}:{n}: an expectation that follows no command")
                rest = stripped[len(ARROW):].strip()
                last.expectation = f"{last.expectation} {rest}".strip()
                continue
            if not stripped or stripped.startswith("#"):
                last = None  # prose or a blank line ends a command's expectation
                continue
            pending_line = n
        code, _, quote = _scan(raw, quote)
        if quote is not None:
            pending.append(code + "\n")  # a newline inside quotes is kept
            continue
        if code.rstrip().endswith("\\"):
            pending.append(code.rstrip()[:-1] + " ")
            continue
        pending.append(code)
        text = "".join(pending).strip()
        pending = []
        try:
            argv = shlex.split(text)
        except ValueError as e:
            raise TourError(f"{page}:{pending_line}: {e}: {text}") from None
        background = argv[-1:] == ["&"]
        if background:
            argv = argv[:-1]
        if not argv or argv[0] != "grpcurl":
            raise TourError(f"{page}:{pending_line}: not a grpcurl command: {text}")
        if DOCS_ADDRESS not in argv[:-1]:
            raise TourError(f"{page}:{pending_line}: names no {DOCS_ADDRESS}: {text}")
        last = Command(len(commands) + 1, page, pending_line, text, argv, background)
        commands.append(last)
    if pending:
        raise TourError(f"{page}:{pending_line}: the tour ends inside a command")
    for c in commands:
        if not c.expectation:
            raise TourError(
                f"{c.where()} has no expected answer: put `{ARROW} ...` on the line under "
                f"it (see tests/grpcurl/test_tours.py)")
        try:
            c.groups = parse_expectation(c.expectation)
        except TourError as e:
            raise TourError(f"{c.where()}: {e}") from None
        check_expectation_shape(c)
    return commands


_DECODER = json.JSONDecoder()


def parse_expectation(text: str) -> list[list[Item]]:
    groups: list[list[Item]] = [[]]
    i = 0

    def skip() -> None:
        nonlocal i
        while i < len(text) and text[i].isspace():
            i += 1

    while True:
        skip()
        if i >= len(text):
            raise TourError(f"expectation ends where an item should be: {text!r}")
        try:
            if text[i] == '"':
                key, i = _DECODER.raw_decode(text, i)
                skip()
                if not text.startswith(":", i):
                    raise TourError(f"no ':' after {key!r} in {text!r}")
                i += 1
                skip()
                value, i = _DECODER.raw_decode(text, i)
                groups[-1].append(Item("pair", key, value))
            elif text[i] == "{":
                obj, i = _DECODER.raw_decode(text, i)
                groups[-1].append(Item("empty") if obj == {} else Item("object", value=obj))
            elif text.startswith("Code:", i):
                m = re.compile(r"Code:\s*([A-Za-z]+)").match(text, i)
                if not m or m.group(1) not in GRPC_CODES:
                    raise TourError(f"not a gRPC code name in {text!r}")
                groups[-1].append(Item("code", value=m.group(1)))
                i = m.end()
            elif text.startswith("Message:", i):
                groups[-1].append(Item("message", value=text[i + len("Message:"):].strip()))
                i = len(text)
            else:
                m = re.compile(r"(.+?)(?=,\s|\sthen\s|$)").match(text, i)
                groups[-1].append(Item("line", value=m.group(1).strip()))
                i = m.end()
        except json.JSONDecodeError as e:
            raise TourError(f"bad JSON in expectation {text!r}: {e}") from None
        skip()
        if i >= len(text):
            return groups
        if text.startswith(",", i):
            i += 1
        elif text.startswith("then", i) and text[i + 4:i + 5].isspace():
            i += 4
            groups.append([])
        else:
            raise TourError(f"expected ',' or 'then' at {text[i:]!r}")


def check_expectation_shape(c: Command) -> None:
    kinds = {item.kind for group in c.groups for item in group}
    if "message" in kinds and "code" not in kinds:
        raise TourError("Message: without Code:")
    if "code" in kinds and (len(c.groups) > 1 or kinds - {"code", "message"}):
        raise TourError("Code: answers hold nothing else")
    if "line" in kinds and kinds != {"line"}:
        raise TourError(f"text and JSON items mixed (is a JSON pair misquoted?): {c.expectation}")
    if "line" in kinds and c.name not in ("list", "describe"):
        raise TourError(f"text items only suit list and describe: {c.expectation}")
    if c.background and (c.name != "WatchEvents" or "code" in kinds):
        raise TourError("only a WatchEvents stream may run in the background")
    if len(c.groups) > 1 and c.name != "WatchEvents":
        raise TourError("`then` only suits a stream (WatchEvents)")


# ---------------------------------------------------------------------------------------
# Checking answers


def json_messages(stdout: str) -> list[object]:
    """grpcurl's JSON output: one document per message."""
    docs, i = [], 0
    while True:
        while i < len(stdout) and stdout[i].isspace():
            i += 1
        if i == len(stdout):
            return docs
        doc, i = _DECODER.raw_decode(stdout, i)
        docs.append(doc)


def _objects(doc):
    if isinstance(doc, dict):
        yield doc
        for v in doc.values():
            yield from _objects(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from _objects(v)


def _is_default(value) -> bool:
    return value in (False, 0, "0", "", [], {})


def _holds(obj: dict, key: str, value) -> bool:
    if _is_default(value):
        return obj.get(key, value) == value
    return key in obj and obj[key] == value


def check_item(item: Item, doc, where: str) -> None:
    if item.kind == "empty":
        assert doc == {}, f"{where}: expected the empty message {{}}, got {doc}"
    elif item.kind == "pair" and _is_default(item.value):
        assert isinstance(doc, dict), f"{where}: not a message: {doc}"
        nested = any(item.key in o for o in _objects(doc) if o is not doc)
        assert item.key in doc or not nested, (
            f"{where}: {item.key!r}: {item.value!r} is a default that grpcurl leaves out; "
            f"use it only for a top-level field, or as part of a {{...}} item")
        assert _holds(doc, item.key, item.value), (
            f"{where}: expected {item.key!r}: {item.value!r} (or absent), got "
            f"{doc.get(item.key)!r}")
    elif item.kind == "pair":
        found = [o[item.key] for o in _objects(doc) if item.key in o]
        assert item.value in found, (
            f"{where}: expected {json.dumps(item.key)}: {json.dumps(item.value)}; "
            f"the answer's {item.key!r} values: {found} in {json.dumps(doc)[:2000]}")
    elif item.kind == "object":
        assert any(all(_holds(o, k, v) for k, v in item.value.items())
                   for o in _objects(doc)), (
            f"{where}: no object holds {json.dumps(item.value)} in {json.dumps(doc)[:4000]}")
    else:
        raise AssertionError(f"{where}: {item.kind} item in a JSON answer")


def check_messages(c: Command, docs: list, expectation: list[list[Item]]) -> None:
    assert len(docs) == len(expectation), (
        f"{c.where()}: expected {len(expectation)} message(s) ({c.expectation}), got "
        f"{len(docs)}: {json.dumps(docs)[:4000]}")
    for n, (doc, group) in enumerate(zip(docs, expectation), start=1):
        for item in group:
            check_item(item, doc, f"{c.where()}, message {n}")


def substitute(text: str, allocation_id: str | None, where: str) -> str:
    if ALLOCATION_ID in text:
        assert allocation_id, (
            f"{where}: {ALLOCATION_ID} stands for the \"id\" of the answer before, which had none")
        text = text.replace(ALLOCATION_ID, allocation_id)
    return text


def with_ids(groups: list[list[Item]], allocation_id: str | None, where: str):
    """The groups with ALLOCATION_ID replaced in their values."""
    out = []
    for group in groups:
        items = []
        for item in group:
            value = item.value
            if item.kind in ("pair", "object", "line", "message"):
                value = json.loads(substitute(json.dumps(value), allocation_id, where))
            items.append(dataclasses.replace(item, value=value))
        out.append(items)
    return out


def check_answer(c: Command, groups, rc: int, stdout: str, stderr: str) -> None:
    items = [item for group in groups for item in group]
    codes = [item.value for item in items if item.kind == "code"]
    shown = f"rc={rc}\nstdout: {stdout[:3000]}\nstderr: {stderr[:3000]}"
    if codes:
        code = codes[0]
        assert rc == 64 + GRPC_CODES[code] and f"Code: {code}\n" in stderr, (
            f"{c.where()}: expected Code: {code}; {shown}")
        message = re.search(r"^  Message: (.*)$", stderr, re.M)
        for item in items:
            if item.kind == "message":
                assert message and item.value in message.group(1), (
                    f"{c.where()}: expected a message containing {item.value!r}; {shown}")
        return
    assert rc == 0 and not stderr, f"{c.where()}: expected success; {shown}"
    if c.name in ("list", "describe"):
        lines = [line.strip() for line in stdout.splitlines()]
        for item in items:
            assert item.value in lines, f"{c.where()}: no line {item.value!r}; {shown}"
        if c.name == "list":
            assert sorted(filter(None, lines)) == sorted(item.value for item in items), (
                f"{c.where()}: list names exactly the services in its expectation; {shown}")
        else:
            check_describe(c, stdout)
        return
    check_messages(c, json_messages(stdout), groups)


def check_describe(c: Command, stdout: str) -> None:
    """`describe` of the service lists every RPC of accelsched.proto's service."""
    symbol = c.argv[-1]
    if symbol != "accelsched.v1.AcceleratorScheduler":
        return
    proto = PROTO.read_text()
    service = re.search(r"service AcceleratorScheduler \{(.*?)\n\}", proto, re.S).group(1)
    want = sorted(re.findall(r"^\s*rpc (\w+)\(", service, re.M))
    got = sorted(re.findall(r"^\s*rpc (\w+) \(", stdout, re.M))
    assert want and got == want, f"{c.where()}: RPCs {got}, accelsched.proto has {want}"


# ---------------------------------------------------------------------------------------
# Processes


def _lines_to_queue(stream, q: queue.Queue) -> None:
    for line in iter(stream.readline, ""):
        q.put(line)
    q.put(None)


class Server:
    def __init__(self, binary: str, db: pathlib.Path, flags: list[str] = ()):
        self.proc = subprocess.Popen(
            [binary, f"--db={db}", "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
             *flags],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.log: list[str] = []
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=_lines_to_queue, args=(self.proc.stderr, lines),
                         daemon=True).start()
        deadline = time.monotonic() + WAIT_TIMEOUT_S
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.stop()
                raise AssertionError(f"accelschedd not ready in {WAIT_TIMEOUT_S}s: {self.log}")
            if line is None:
                self.proc.wait()
                raise AssertionError(
                    f"accelschedd exited {self.proc.returncode} before ready: {self.log}")
            self.log.append(line)
            m = re.search(r"accelschedd ready: grpc_port=(\d+) metrics_port=(\d+)", line)
            if m:
                self.address = f"127.0.0.1:{m.group(1)}"
                self.metrics_url = f"http://127.0.0.1:{m.group(2)}/metrics"
                break
        # Keep draining its log so that it never blocks on a full pipe.
        threading.Thread(target=self._drain, args=(lines,), daemon=True).start()

    def _drain(self, lines: queue.Queue) -> None:
        while (line := lines.get()) is not None:
            self.log.append(line)

    def watchers(self) -> int:
        no_proxy = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with no_proxy.open(self.metrics_url, timeout=10) as r:
            text = r.read().decode()
        return int(float(re.search(r"^accelsched_watchers (\S+)$", text, re.M).group(1)))

    def wait_for_watchers(self, n: int, where: str) -> None:
        """Until the server counts n WatchEvents streams (a condition it only shows on
        /metrics, so this polls)."""
        deadline = time.monotonic() + WAIT_TIMEOUT_S
        while (seen := self.watchers()) != n:
            assert time.monotonic() < deadline, (
                f"{where}: the server counts {seen} WatchEvents streams, not {n}, after "
                f"{WAIT_TIMEOUT_S}s")
            time.sleep(0.02)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=WAIT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


class Stream:
    """A grpcurl in the background; its messages are decoded as they arrive."""

    def __init__(self, command: Command, argv: list[str], groups: list[list[Item]]):
        self.command = command
        self.groups = groups
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.out = ""
        self.err = ""
        self.messages: list = []
        self.cond = threading.Condition()
        self.done = False
        threading.Thread(target=self._read_out, daemon=True).start()
        self.err_reader = threading.Thread(target=self._read_err, daemon=True)
        self.err_reader.start()

    def _read_out(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")()
        fd = self.proc.stdout.fileno()
        while chunk := os.read(fd, 65536):  # returns what has arrived
            with self.cond:
                self.out += decoder.decode(chunk)
                try:
                    self.messages = json_messages(self.out)
                except json.JSONDecodeError:
                    pass  # a message still arriving
                self.cond.notify_all()
        with self.cond:
            self.done = True
            self.cond.notify_all()

    def _read_err(self) -> None:
        self.err = self.proc.stderr.read().decode()

    def wait_for_messages(self) -> None:
        """Until it has printed as many messages as it expects (or ended)."""
        with self.cond:
            self.cond.wait_for(lambda: len(self.messages) >= len(self.groups) or self.done,
                               timeout=WAIT_TIMEOUT_S)

    def finish(self) -> tuple[int, str, str]:
        try:
            rc = self.proc.wait(timeout=WAIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        with self.cond:
            self.cond.wait_for(lambda: self.done, timeout=WAIT_TIMEOUT_S)
        self.err_reader.join(WAIT_TIMEOUT_S)  # stderr read to its end
        return rc, self.out, self.err


def _binary(env: str, built: pathlib.Path, on_path: str | None = None) -> str:
    """$env, else the one the build left, else one on PATH."""
    path = os.environ.get(env)
    if path:
        assert os.access(path, os.X_OK), f"{env}={path} is not an executable"
        return path
    if os.access(built, os.X_OK):
        return str(built)
    path = on_path and shutil.which(on_path)
    # A missing tool fails the test: a skip would let a run without it look green.
    assert path, f"no {built}: set {env} (scripts/grpcurl_test.sh does)"
    return path


# ---------------------------------------------------------------------------------------
# Tests


TOURS = all_tours()


def test_the_readme_and_the_grpcurl_page_have_tours():
    pages = {tour.page for tour in TOURS}
    assert {"README.md", "docs/integrations/grpcurl.md"} <= pages, pages


def test_every_grpcurl_block_is_fenced_as_sh():
    found = []
    for page in doc_pages():
        found += untested_grpcurl_blocks(page.read_text(), page.relative_to(SOURCE_DIR).as_posix())
    assert not found, "\n".join(found)
    assert untested_grpcurl_blocks("```bash\ngrpcurl -plaintext x list\n```\n", "p.md") == [
        "p.md:1: a ```bash block with a grpcurl command (fence it as ```sh so that it runs)"]


@pytest.mark.parametrize("tour", TOURS, ids=Tour.id)
def test_tour_parses(tour):
    assert parse_tour(tour), f"{tour.id()}: a tour with no commands"


@pytest.mark.parametrize("tour", TOURS, ids=Tour.id)
def test_tour(tour, tmp_path):
    commands = parse_tour(tour)
    grpcurl = _binary("GRPCURL", SOURCE_DIR / "build" / "go" / "bin" / "grpcurl", "grpcurl")
    server = Server(_binary("ACCELSCHEDD", SOURCE_DIR / "build" / "accelschedd"),
                    tmp_path / "accelsched.db", tour.flags)
    streams: list[Stream] = []
    try:
        allocation_id = None
        for c in commands:
            argv = [grpcurl] + [
                substitute(a, allocation_id, c.where()).replace(DOCS_ADDRESS, server.address)
                for a in c.argv[1:]]
            groups = with_ids(c.groups, allocation_id, c.where())
            if c.background:
                streams.append(Stream(c, argv, groups))
                server.wait_for_watchers(len(streams), c.where())
                continue
            try:
                r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                                   text=True, timeout=COMMAND_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"{c.where()}: no answer in {COMMAND_TIMEOUT_S}s") from None
            check_answer(c, groups, r.returncode, r.stdout, r.stderr)
            allocation_id = None
            if r.returncode == 0 and c.name not in ("list", "describe"):
                docs = json_messages(r.stdout)
                if len(docs) == 1 and isinstance(docs[0], dict):
                    allocation_id = docs[0].get("id")
        # Every event the tour causes is committed before its command's answer; the
        # streams may still be writing them.
        for s in streams:
            s.wait_for_messages()
    finally:
        server_rc = server.stop()
        finished = [(s, *s.finish()) for s in streams]
    assert server_rc == 0, f"accelschedd exited {server_rc}: {''.join(server.log)[-3000:]}"
    for s, rc, out, err in finished:
        c = s.command
        check_messages(c, json_messages(out), s.groups)
        unavailable = 64 + GRPC_CODES["Unavailable"]
        assert rc == unavailable and "Code: Unavailable\n" in err, (
            f"{c.where()}: a stream open when the server stops ends with Unavailable; "
            f"rc={rc} stderr: {err}")


def _tour(text: str) -> Tour:
    (tour,) = tours(text, "page.md")
    return tour


def test_a_command_without_expectation_fails():
    readme = (f"## A tour\n\n```sh\n"
              f"grpcurl -plaintext {DOCS_ADDRESS} list\n# → grpc.health.v1.Health\n"
              f"grpcurl -plaintext -d '{{\"name\": \"n\",\n  \"force\": true}}' \\\n"
              f"  {DOCS_ADDRESS} accelsched.v1.AcceleratorScheduler/RemoveNode  # remove\n"
              f"```\n")
    with pytest.raises(TourError, match=r"tour command 2 \(page.md:6, RemoveNode\) has no expected"):
        parse_tour(_tour(readme))
    fixed = readme.replace("# remove\n", "# remove\n# → Code: NotFound\n")
    commands = parse_tour(_tour(fixed))
    assert [c.argv for c in commands] == [
        ["grpcurl", "-plaintext", DOCS_ADDRESS, "list"],
        ["grpcurl", "-plaintext", "-d", '{"name": "n",\n  "force": true}', DOCS_ADDRESS,
         "accelsched.v1.AcceleratorScheduler/RemoveNode"],
    ]
    assert [[i.kind for i in g] for g in commands[1].groups] == [["code"]]


def test_expectation_grammar():
    groups = parse_expectation(
        '"type": "ALLOCATED", {"node": "n", "free": "0"} then "type": "RELEASED"')
    assert [[(i.kind, i.key, i.value) for i in g] for g in groups] == [
        [("pair", "type", "ALLOCATED"), ("object", None, {"node": "n", "free": "0"})],
        [("pair", "type", "RELEASED")],
    ]
    with pytest.raises(TourError):
        parse_expectation('"state" "ACTIVE"')
    with pytest.raises(TourError):
        parse_expectation("Code: NoSuchCode")


@pytest.mark.parametrize("page", ["README.md", "docs/integrations/grpcurl.md"])
def test_the_docs_install_the_pinned_grpcurl(page):
    script = (SOURCE_DIR / "scripts" / "grpcurl_test.sh").read_text()
    version = re.search(r"^grpcurl_version=(v\S+)", script, re.M).group(1)
    command = f"go install github.com/fullstorydev/grpcurl/cmd/grpcurl@{version}"
    assert command in (SOURCE_DIR / page).read_text(), (
        f"{page} should install grpcurl as scripts/grpcurl_test.sh does: {command}")


def test_blocks_without_grpcurl_are_no_tours_and_a_server_line_sets_flags():
    text = ("```sh\nbash scripts/run.sh\n```\n\n"
            f"```sh\n{SERVER} --topology_levels=a,b &\n"
            f"grpcurl -plaintext {DOCS_ADDRESS} list\n# → grpc.health.v1.Health\n```\n")
    (tour,) = tours(text, "page.md")
    assert (tour.line, tour.flags) == (7, ["--topology_levels=a,b"])
    assert [c.line for c in parse_tour(tour)] == [7]
    with pytest.raises(TourError, match="sets no --db"):
        tours(text.replace("--topology_levels=a,b", "--db=x.db"), "page.md")
    # A grpcurl block that is no tour (prose answers, a second server) fails.
    with pytest.raises(TourError, match="not a grpcurl command"):
        parse_tour(_tour(f"```sh\ngrpcurl -plaintext {DOCS_ADDRESS} list\n# → x\n"
                         "build/accelschedd --db=b.db\n```\n"))


# ---------------------------------------------------------------------------------------
# The flags the docs name are the binaries' own


def _own_flags(binary: str) -> set[str]:
    """The flags `binary --helpfull` lists under the project's own sources (not abseil's)."""
    r = subprocess.run([binary, "--helpfull"], capture_output=True, text=True,
                       timeout=COMMAND_TIMEOUT_S)
    flags, own = set(), False
    for line in (r.stdout + r.stderr).splitlines():
        if line.startswith("  Flags from "):
            own = "/absl/" not in line
        elif own and (m := re.match(r"    --(\w+) ", line)):
            flags.add(m.group(1))
    assert flags, f"{binary} --helpfull listed no flags of its own: {r.stdout[:500]}"
    return flags


def _table_flags(page: pathlib.Path) -> set[str]:
    """The flags a page's tables document: each `--name` in the first cell of a row that
    starts with one (`--tls_cert`, `--tls_key` is two)."""
    flags = set()
    for cell in re.findall(r"^\| (`--[^|]*)\|", page.read_text(), re.M):
        flags.update(re.findall(r"`--(\w+)", cell))
    return flags


def _commands_flags(binary_name: str) -> list[tuple[str, str]]:
    """(page:line, flag) for every --flag given to `build/<binary_name>` in a ```sh block,
    with continued lines (a trailing backslash) joined and `VAR=value` words before it
    skipped."""
    found = []
    for page in doc_pages():
        in_sh, command, start = False, "", 0
        for n, line in enumerate(page.read_text().splitlines(), start=1):
            if line.strip().startswith("```"):
                in_sh = line.strip() == "```sh" and not in_sh
                continue
            if not in_sh:
                continue
            if not command:
                start = n
            command += line.rstrip().removesuffix("\\") + " "
            if line.rstrip().endswith("\\"):
                continue
            words = command.split()
            command = ""
            while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
                words = words[1:]
            if words and words[0] in (f"build/{binary_name}", binary_name):
                where = f"{page.relative_to(SOURCE_DIR)}:{start}"
                found += [(where, w[2:].split("=")[0]) for w in words[1:] if w.startswith("--")]
    return found


@pytest.mark.parametrize("binary_name,page", [
    ("accelschedd", "docs/operations/flags.md"),
    ("accelsched-agent", "docs/operations/agent.md"),
])
def test_the_flags_page_lists_every_flag_and_no_other(binary_name, page):
    binary = _binary("ACCELSCHEDD", SOURCE_DIR / "build" / "accelschedd")
    binary = str(pathlib.Path(binary).with_name(binary_name))
    own, documented = _own_flags(binary), _table_flags(SOURCE_DIR / page)
    assert not own - documented, f"{page} does not document {sorted(own - documented)}"
    assert not documented - own, f"{page} documents flags {binary_name} has not: " \
        f"{sorted(documented - own)}"
    wrong = [(where, flag) for where, flag in _commands_flags(binary_name) if flag not in own]
    assert not wrong, f"commands of the docs give {binary_name} flags it has not: {wrong}"
