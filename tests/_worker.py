"""What a spawn worker runs in ``test_workers.py`` (a module of its own: the worker imports it by name)."""

from __future__ import annotations

import pickle
from typing import Any


def answer_all(objects: Any, questions: dict[str, str]) -> dict[str, Any]:
    """Each object (pickled bytes or a dict) put to work on its question: a route, the retrieved node ids, or an
    answer's text."""
    if isinstance(objects, bytes):
        objects = pickle.loads(objects)
    out: dict[str, Any] = {}
    for name, obj in objects.items():
        question = questions[name]
        if hasattr(obj, "route"):
            out[name] = obj.route(question).route
        elif hasattr(obj, "query"):
            out[name] = str(obj.query(question)).strip()
        else:
            out[name] = [hit.node.node_id for hit in obj.retrieve(question)]
    return out
