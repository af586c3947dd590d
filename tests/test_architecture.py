"""Imports point one way: no import cycle among the package's modules (module- and function-level imports; type
annotations under ``if TYPE_CHECKING:`` run nothing and are left out), no import from a lower layer up to a
higher one, no capability importing another outside the entity linker's sources, argparse only in ``cli``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "llama_index_kgplus"

#: lowest first; a module may import from its own layer or a lower one. A public stub left at the old path of a
#: module that went private (``defaults`` for ``_defaults``, ...) sits beside it; it imports only ``_deprecation``.
LAYERS = (
    {"_deprecation", "_public", "_redact", "errors", "events", "_paths", "_files", "_lock", "_gc", "files",
     "_defaults", "defaults", "_jsonl", "jsonl", "_sync", "_kvstore", "_vectors", "vectors", "_text", "text", "_sample", "sample",
     "_corpus", "corpus"},
    {"llm", "_structured", "structured", "graph_stores", "_lancedb", "_server_store", "_sqlitedoc", "_streaming", "_indexing", "_upgrade", "_query_loop",
     "compression", "summarizers"},
    {"hierarchy", "glossary", "kg", "entity_graph", "graphrag", "tables", "router"},
    # the top level re-exports EvalRunner; the sync (and ``indexing``, its public home) updates every capability's index
    {"_assembly", "_syncing", "_ingesting", "indexing", "evaluation", "__init__"},
    {"cli", "ui", "_demo", "demo", "_doctor", "doctor", "_testing", "testing"},
)  # fmt: skip
CAPABILITIES = LAYERS[2]
#: the entity linker reads entities from a knowledge graph, a glossary or GraphRAG's LLM extraction
CAPABILITY_EDGES = {("entity_graph", "kg"), ("entity_graph", "glossary"), ("entity_graph", "graphrag")}


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules ``name`` imports, at module level or inside functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for n in ast.walk(node)
    }

    def resolve(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    found: set[str | None] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {resolve(a.name) for a in node.names if a.name.startswith("llama_index_kgplus")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            if base.startswith("llama_index_kgplus"):
                found |= {resolve(f"{base}.{a.name}") if f"{base}.{a.name}" in modules else resolve(base)
                          for a in node.names}  # fmt: skip
    return {m for m in found if m is not None and m != name}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _layer(part: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if part in layer)


def test_every_module_has_a_layer(graph):
    assert not [m for m in graph if not any(_part(m) in layer for layer in LAYERS)]


def test_no_import_cycle(graph):
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        order[module] = low[module] = len(order)
        stack.append(module)
        for target in graph[module]:
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            component = []
            while True:
                component.append(stack.pop())
                if component[-1] == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in graph:
        if module not in order:
            visit(module)
    assert cycles == []


def test_imports_point_down_and_capabilities_stand_side_by_side(graph):
    upward, across = [], []
    for module, targets in graph.items():
        for target in targets:
            source_part, target_part = _part(module), _part(target)
            if target == "llama_index_kgplus" or source_part == target_part:
                continue
            if _layer(target_part) > _layer(source_part):
                upward.append(f"{module} -> {target}")
            elif target_part in CAPABILITIES and source_part in CAPABILITIES:
                if (source_part, target_part) not in CAPABILITY_EDGES:
                    across.append(f"{module} -> {target}")
    assert upward == [] and across == []


def test_ui_uses_no_cli_and_only_cli_parses_arguments(graph):
    assert not [m for m, targets in graph.items() if _part(m) == "ui" and any(_part(t) == "cli" for t in targets)]
    parsing = [
        name
        for name, path in _modules().items()
        if _part(name) != "cli" and "argparse" in {a.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Import) for a in n.names}
    ]  # fmt: skip
    assert parsing == []
