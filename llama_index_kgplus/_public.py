"""The public path of the public names: each public ``__init__`` calls :func:`set_public_module` so that
``repr``, tracebacks, pickles and the API reference name ``llama_index_kgplus.kg.KGPath`` rather than the private
module that defines it (httpx's habit)."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import Any


def set_public_module(module_name: str, namespace: Mapping[str, Any], names: Iterable[str]) -> None:
    """Set ``__module__`` of every class and function among ``names`` (looked up in ``namespace``) to
    ``module_name``; constants and type aliases keep theirs."""
    for name in names:
        obj = namespace[name]
        if inspect.isclass(obj) or inspect.isfunction(obj):
            obj.__module__ = module_name
