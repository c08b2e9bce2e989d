"""A loopback HTTP server that speaks the OpenAI and Anthropic wire formats.

The real SDKs talk to it through ``base_url``: point ``OpenAIClient`` at ``stub.url``
(``http://127.0.0.1:PORT/v1``; the SDK posts to ``/v1/responses`` and
``/v1/chat/completions``) and ``AnthropicClient`` at ``stub.anthropic_url`` (the root; the SDK
posts to ``/v1/messages``). Every request is recorded in ``stub.requests``. Replies come from
a queue (``stub.enqueue``), else from ``stub.responder``, else a well-formed default reply in
the wire format of the path. Usable from tests and benchmarks alike: no pytest here.

    with StubServer() as stub:
        stub.enqueue(rate_limited(retry_after=20), Reply(text='{"answer": "x"}'))
        client = OpenAIClient(model="gpt-x", api_key="sk-test", base_url=stub.url)
        ...
        assert stub.requests[-1].body["store"] is False
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Self

UsageSpec = dict[str, Any] | Literal["default", "bare"] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """One scripted answer.

    ``body`` set: sent verbatim (a dict or list as JSON, a str as text). Otherwise a status
    below 400 gets the path's success format wrapping ``text`` (None: a sensible JSON answer
    for the request) with ``usage`` ("default": plausible counts with details; "bare": counts
    without any details or cache fields; None: ``null``; a dict: that usage object verbatim),
    and a status of 400 or more gets the path's error format carrying ``error_message``.
    """

    status: int = 200
    text: str | None = None
    usage: UsageSpec = "default"
    model: str | None = None
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    # > 0: the body goes out one byte at a time, this many seconds apart (headers at once).
    drip_s: float = 0.0
    error_message: str = "stub error"
    error_type: str | None = None
    error_code: str | None = None


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """What a client sent: method, path, headers (lower-cased names) and the parsed JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes


ResponderResult = Reply | tuple[int, Any, dict[str, str], float]
Responder = Callable[[str, Any], ResponderResult]


# -- fault and reply helpers -------------------------------------------------------------


def rate_limited(retry_after: float | None = 20, message: str = "Rate limit reached.") -> Reply:
    """A 429, with a ``retry-after`` header unless ``retry_after`` is None."""
    headers = {} if retry_after is None else {"retry-after": f"{retry_after:g}"}
    return Reply(
        status=429,
        headers=headers,
        error_message=message,
        error_type="rate_limit_error",
    )


def server_error(status: int = 500, message: str = "The server had an error.") -> Reply:
    """A 5xx in the path's error format."""
    return Reply(status=status, error_message=message, error_type="api_error")


def unauthorized(message: str = "Incorrect API key provided.") -> Reply:
    """A 401 in the path's error format."""
    return Reply(status=401, error_message=message, error_type="authentication_error")


def context_too_long(path_kind: Literal["openai", "anthropic"] = "openai") -> Reply:
    """A 400 saying the prompt does not fit, worded as the provider words it."""
    if path_kind == "anthropic":
        return Reply(
            status=400,
            error_message="prompt is too long: 250000 tokens > 200000 maximum",
            error_type="invalid_request_error",
        )
    return Reply(
        status=400,
        error_message="This model's maximum context length is 128000 tokens. However, your "
        "messages resulted in 250000 tokens.",
        error_type="invalid_request_error",
        error_code="context_length_exceeded",
    )


def rejects_structured(
    message: str = "response_format 'json_schema' is not supported",
) -> Reply:
    """A 400 from a server that cannot do structured output."""
    return Reply(status=400, error_message=message, error_type="invalid_request_error")


def slow(delay_s: float, reply: Reply | None = None) -> Reply:
    """``reply`` (default: a normal answer) sent after ``delay_s`` seconds."""
    return replace(reply or Reply(), delay_s=delay_s)


def dripping(every_s: float, reply: Reply | None = None) -> Reply:
    """``reply`` (default: a normal answer) whose body trickles out a byte every ``every_s``."""
    return replace(reply or Reply(), drip_s=every_s)


def hanging() -> Reply:
    """A server that reads the request and never answers (until the stub closes)."""
    return Reply(delay_s=3_600)


def malformed(text: str = "Sure! The answer is on page three, I think.") -> Reply:
    """A well-formed HTTP reply whose model output is not JSON."""
    return Reply(text=text)


def not_json(body: str = '{"id": "resp_1", "output": [') -> Reply:
    """A 200 reply that says it is JSON and is not (a proxy's cut-off or garbled body)."""
    return Reply(body=body, headers={"content-type": "application/json"})


def bare_usage(text: str | None = None) -> Reply:
    """A normal reply whose usage has no details or cache fields."""
    return Reply(text=text, usage="bare")


def json_output(obj: Any, **kwargs: Any) -> Reply:
    """A normal reply whose model output is ``obj`` as JSON."""
    return Reply(text=json.dumps(obj), **kwargs)


# -- the wire formats ----------------------------------------------------------------------


def kind_of(path: str) -> Literal["responses", "chat", "messages", "unknown"]:
    """Which API a request path belongs to."""
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/messages"):
        return "messages"
    return "unknown"


def prompt_of(body: Any) -> str:
    """The text of the last user message in a Responses, Chat or Messages request body."""
    if not isinstance(body, dict):
        return ""
    if isinstance(body.get("input"), str):
        return str(body["input"])
    items = body.get("messages") or body.get("input") or []
    if not isinstance(items, list) or not items:
        return ""
    content = items[-1].get("content", "") if isinstance(items[-1], dict) else ""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def schema_name_of(body: Any) -> str | None:
    """The structured-output shape a request asked for, if any: ``answer``, ``retrieval``,
    ``retrieval_per_question`` or ``extraction`` (OpenAI sends the name; for Anthropic's
    nameless schema it is told from the schema's properties)."""
    if not isinstance(body, dict):
        return None
    fmt = (body.get("text") or {}).get("format") or {}
    if fmt.get("name"):
        return str(fmt["name"])
    schema = (body.get("response_format") or {}).get("json_schema") or {}
    if schema.get("name"):
        return str(schema["name"])
    anthropic_schema = ((body.get("output_config") or {}).get("format") or {}).get("schema") or {}
    if anthropic_schema:
        properties = anthropic_schema.get("properties") or {}
        if "results" in properties:
            return "retrieval_per_question"
        if "relevant" in properties:
            return "extraction"
        return "retrieval" if "pages" in properties else "answer"
    return None


_PAGE_TAG = re.compile(r"^<PAGE (\d+)>$", re.MULTILINE)
_QUESTION = re.compile(r"(?im)^\s*question(?:\s+(\d+))?\s*:\s*(.+?)\s*$")


def pages_in(prompt: str) -> list[int]:
    """The page numbers tagged in a prompt, in order, each once."""
    return list(dict.fromkeys(int(n) for n in _PAGE_TAG.findall(prompt)))


def questions_in(prompt: str) -> list[str]:
    """The question(s) a prompt asks, each once, in order (``Question:`` or ``Question n:``)."""
    return list(dict.fromkeys(text for _, text in _QUESTION.findall(prompt)))


def default_text(body: Any) -> str:
    """A sensible model output for the shape asked: the first pages of the prompt for a
    retrieval (else 1 and 2), a first-page citation for an answer, an extract of the first
    page for an extraction."""
    prompt = prompt_of(body)
    questions = questions_in(prompt)
    question = questions[-1] if questions else ""
    pages = pages_in(prompt)
    name = schema_name_of(body)
    if name == "retrieval_per_question":
        found = pages[:2] or [1, 2]
        return json.dumps(
            {"results": [{"question": i, "pages": found} for i in range(1, len(questions) + 1)]}
        )
    if name == "retrieval" or (name is None and '"pages"' in prompt):
        return json.dumps({"question": question, "pages": pages[:2] or [1, 2]})
    if name == "extraction":
        first = str(pages[0]) if pages else "n/a"
        return json.dumps(
            {"relevant": True, "extracts": [{"page": first, "text": "stub extract"}], "answer": "stub answer"}
        )
    return json.dumps(
        {"question": question, "answer": "stub answer", "page": str(pages[0]) if pages else "1"}
    )


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def usage_for(kind: str, spec: UsageSpec, prompt: str, text: str) -> Any:
    """The usage object for a wire format, from a ``Reply.usage`` spec."""
    if spec is None or isinstance(spec, dict):
        return spec
    n_in, n_out = _tokens(prompt), _tokens(text)
    bare = spec == "bare"
    if kind == "responses":
        usage: dict[str, Any] = {
            "input_tokens": n_in,
            "output_tokens": n_out,
            "total_tokens": n_in + n_out,
        }
        if not bare:
            usage["input_tokens_details"] = {
                "cached_tokens": 0,
                "cache_write_tokens": 0,
            }
            usage["output_tokens_details"] = {"reasoning_tokens": 0}
        return usage
    if kind == "chat":
        usage = {
            "prompt_tokens": n_in,
            "completion_tokens": n_out,
            "total_tokens": n_in + n_out,
        }
        if not bare:
            usage["prompt_tokens_details"] = {"cached_tokens": 0}
            usage["completion_tokens_details"] = {"reasoning_tokens": 0}
        return usage
    usage = {"input_tokens": n_in, "output_tokens": n_out}
    if not bare:
        usage.update(cache_read_input_tokens=0, cache_creation_input_tokens=0)
    return usage


def success_body(kind: str, reply: Reply, request_body: Any, counter: int) -> dict[str, Any]:
    """A success reply in the wire format of ``kind``."""
    text = reply.text if reply.text is not None else default_text(request_body)
    asked = request_body.get("model") if isinstance(request_body, dict) else None
    model = reply.model or str(asked or "stub-model")
    usage = usage_for(kind, reply.usage, prompt_of(request_body), text)
    if kind == "responses":
        return {
            "id": f"resp_stub{counter}",
            "object": "response",
            "created_at": time.time(),
            "status": "completed",
            "model": model,
            "error": None,
            "incomplete_details": None,
            "output": [
                {
                    "id": f"msg_stub{counter}",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            ],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": usage,
        }
    if kind == "chat":
        return {
            "id": f"chatcmpl-stub{counter}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": text},
                }
            ],
            "usage": usage,
        }
    return {
        "id": f"msg_stub{counter}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }


def error_body(kind: str, reply: Reply) -> dict[str, Any]:
    """An error reply in the wire format of ``kind``."""
    if kind == "messages":
        return {
            "type": "error",
            "error": {
                "type": reply.error_type or "api_error",
                "message": reply.error_message,
            },
        }
    return {
        "error": {
            "message": reply.error_message,
            "type": reply.error_type or "server_error",
            "param": None,
            "code": reply.error_code,
        }
    }


# -- the server ----------------------------------------------------------------------------


class StubServer:
    """A ``ThreadingHTTPServer`` on 127.0.0.1 in a daemon thread; use as a context manager."""

    def __init__(self, responder: Responder | None = None) -> None:
        self.responder = responder
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        # Body bytes sent slowly (``drip_s``), and clients that hung up in the middle.
        self.dripped = 0
        self.hangups = 0
        self._queue: deque[ResponderResult] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._counter = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle
    def start(self) -> Self:
        """Bind a free port and serve in the background."""
        handler = type("_BoundHandler", (_Handler,), {"stub": self})
        self._httpd = _QuietServer(("127.0.0.1", 0), handler)
        # A short poll interval keeps `close` (and so each test's teardown) fast.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True, name="stub-server"
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; delayed replies still waiting are abandoned."""
        self._closing.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # addresses
    @property
    def port(self) -> int:
        """The bound port."""
        if self._httpd is None:
            raise RuntimeError("StubServer is not running")
        return int(self._httpd.server_address[1])

    @property
    def root(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The OpenAI base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"{self.root}/v1"

    openai_url = url

    @property
    def anthropic_url(self) -> str:
        """The Anthropic base URL: the root (the SDK adds ``/v1/messages``)."""
        return self.root

    # scripting
    def enqueue(self, *replies: ResponderResult) -> None:
        """Queue replies; each request takes the next, then falls back to the responder."""
        with self._lock:
            self._queue.extend(replies)

    def clear(self) -> None:
        """Forget recorded requests and queued replies."""
        with self._lock:
            self.requests.clear()
            self._queue.clear()
            self.max_in_flight = 0

    @property
    def last(self) -> RecordedRequest:
        """The most recent request."""
        with self._lock:
            return self.requests[-1]

    def bodies(self, kind: str | None = None) -> list[Any]:
        """Recorded JSON bodies, optionally only those for ``responses``/``chat``/``messages``."""
        with self._lock:
            return [r.body for r in self.requests if kind is None or kind_of(r.path) == kind]

    # request handling (called from handler threads)
    def _record(self, request: RecordedRequest) -> tuple[Reply, int]:
        with self._lock:
            self.requests.append(request)
            self._counter += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            scripted = self._queue.popleft() if self._queue else None
            counter = self._counter
        if scripted is None and self.responder is not None:
            scripted = self.responder(request.path, request.body)
        return _as_reply(scripted), counter

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _wait(self, delay_s: float) -> None:
        if delay_s > 0:
            self._closing.wait(delay_s)


def _as_reply(result: ResponderResult | None) -> Reply:
    if result is None:
        return Reply()
    if isinstance(result, Reply):
        return result
    status, body, headers, delay_s = result
    return Reply(status=status, body=body, headers=dict(headers or {}), delay_s=delay_s)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out hangs up before a delayed reply: expected, not news.
        pass


class _Handler(BaseHTTPRequestHandler):
    stub: StubServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._send(404, {"error": {"message": f"no route for GET {self.path}"}}, {})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        reply, counter = self.stub._record(RecordedRequest("POST", self.path, headers, body, raw))
        try:
            self.stub._wait(reply.delay_s)
            if self.stub._closing.is_set():
                self.close_connection = True
                return
            kind = kind_of(self.path)
            if reply.body is not None:
                payload: Any = reply.body
            elif kind == "unknown":
                payload, reply = (
                    {"error": {"message": f"no route for {self.path}"}},
                    Reply(status=404),
                )
            elif reply.status >= 400:
                payload = error_body(kind, reply)
            else:
                payload = success_body(kind, reply, body, counter)
            self._send(reply.status, payload, reply.headers, reply.drip_s)
        finally:
            self.stub._done()

    def _send(self, status: int, payload: Any, headers: dict[str, str], drip_s: float = 0.0) -> None:
        if isinstance(payload, (bytes, str)):
            data = payload.encode() if isinstance(payload, str) else payload
            ctype = "text/plain; charset=utf-8"
        else:
            data, ctype = json.dumps(payload).encode(), "application/json"
        self.send_response(status)
        if not any(name.lower() == "content-type" for name in headers):  # a reply may name its own
            self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.send_header("x-request-id", "req_stub")
        self.send_header("request-id", "req_stub")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if drip_s <= 0:
            self.wfile.write(data)
            return
        self.wfile.flush()
        for i in range(len(data)):
            if self.stub._closing.wait(drip_s):
                return
            try:
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
            except OSError:  # the client hung up: what a deadline is for
                self.stub.hangups += 1
                return
            self.stub.dripped += 1
