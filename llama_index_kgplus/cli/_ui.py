"""``kgplus ui``: the browser workbench (optional extra ``ui``) on the sources given here, and only those.

The options are checked in this process (one line, exit 2, before any model loads or the server starts), then
``streamlit run llama_index_kgplus/ui/app.py`` starts with the checked configuration as JSON in
``$KGPLUS_UI_CONFIG``, bound to ``--host`` (default 127.0.0.1) and ``--port`` (default 8501), headless, with
usage statistics and the file watcher off. Ctrl-C stops it.
"""

from __future__ import annotations

import argparse
import errno
import importlib.util
import os
import socket
import subprocess
import sys

from llama_index_kgplus._paths import user_path
from llama_index_kgplus.cli import _args
from llama_index_kgplus.cli._ask import _table_arg
from llama_index_kgplus.errors import InputDataError, KGPlusSetupError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8501


def _port(value: str) -> int:
    number = _args.positive_int(value)
    if number > 65535:
        raise argparse.ArgumentTypeError(f"takes a port from 1 to 65535, not {value}")
    return number


def _check_port(host: str, port: int) -> None:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise InputDataError(f"--host {host}: cannot resolve it ({exc.strerror}).") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise InputDataError(f"--port {port} is in use on {host}: give another --port.") from None
            raise InputDataError(f"--host {host} --port {port}: cannot listen there ({exc.strerror}).") from None


def streamlit_command(host: str, port: int) -> list[str]:
    """The command line of the workbench's server: ``streamlit run app.py`` after a warm-up (see ``ui._serve``)."""
    return [
        sys.executable, "-m", "llama_index_kgplus.ui._serve",
        "--server.address", host, "--server.port", str(port), "--server.headless", "true",
        "--server.fileWatcherType", "none", "--server.runOnSave", "false", "--browser.gatherUsageStats", "false",
        "--global.developmentMode", "false", "--client.toolbarMode", "minimal", "--theme.base", "light",
    ]  # fmt: skip


def _ui(args: argparse.Namespace) -> int:
    from llama_index_kgplus.ui import WorkbenchConfig
    from llama_index_kgplus.ui._config import CONFIG_ENV

    if importlib.util.find_spec("streamlit") is None:
        raise KGPlusSetupError("the workbench needs Streamlit: pip install 'llama-index-kgplus[ui]'.")
    config = WorkbenchConfig(
        index=args.index, kg_store=args.kg_store, graphrag=args.graphrag, glossary=args.glossary,
        tables=dict(args.table or []), eval_dir=args.eval, llm=args.llm, top_k=args.top_k,
        context_budget=args.context_budget,
    ).check()  # fmt: skip
    if len(dict(args.table or [])) != len(args.table or []):
        raise InputDataError("--table: each NAME once.")
    if config.kg_store:
        from llama_index_kgplus.kg import KnowledgeGraph

        KnowledgeGraph.open(config.kg_store).close()  # reachable (an embedded store: present), before the server
    _check_port(args.host, args.port)
    print(f"kgplus ui: open http://{args.host}:{args.port} (Ctrl-C stops the workbench)", flush=True)
    env = {**os.environ, CONFIG_ENV: config.to_json(), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    return subprocess.run(streamlit_command(args.host, args.port), env=env, check=False).returncode


def register(commands: _args.Commands) -> None:
    from llama_index_kgplus.cli._setup import LLM_HELP
    from llama_index_kgplus.compression._compressor import DEFAULT_CONTEXT_BUDGET

    ui = commands.add("ui", help="the browser workbench: ask and see why, browse, compare evaluations")
    ui.add_argument("--index", type=user_path, help="persisted index (kgplus ingest): local and multi-hop questions")
    ui.add_argument("--kg-store", metavar="URI", help="knowledge graph store (kgplus kg import): path questions")
    ui.add_argument("--graphrag", type=user_path, metavar="DIR", help="GraphRAG store (kgplus graphrag index): global")
    ui.add_argument(
        "--glossary", type=user_path, metavar="FILE", help="glossary .json or .csv: rewrite local questions"
    )
    ui.add_argument(
        "--table", action="append", type=_table_arg, metavar="NAME=PATH",
        help="a CSV, Parquet, SQLite or DuckDB file as table NAME (repeatable): table questions",
    )  # fmt: skip
    ui.add_argument("--eval", type=user_path, metavar="DIR", help="a `kgplus eval --out` folder for the Compare page")
    ui.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})")
    ui.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    ui.add_argument("--llm", default=None, help=LLM_HELP)
    ui.add_argument("--top-k", type=_args.positive_int, default=5, help="passages to retrieve (default 5)")
    ui.add_argument(
        "--context-budget", type=_args.positive_int, default=DEFAULT_CONTEXT_BUDGET, metavar="TOKENS",
        help=f"tokens of passage text the LLM reads (default {DEFAULT_CONTEXT_BUDGET})",
    )  # fmt: skip
    ui.set_defaults(func=_ui)
