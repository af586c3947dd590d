"""Pausing Python's cyclic garbage collector while many objects are made at once.

Each collection of the oldest generation walks every live object, and collections are triggered by allocations:
making 10^5 objects in a process that already holds many turns a linear load into a much slower one (a glossary
of 10^5 terms, an entity graph of 10^5 entities). Nothing made there is a cycle to collect.

Example:

```python
with paused_gc():
    entries = [make(record) for record in records]
```
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]


@contextmanager
def paused_gc() -> Iterator[None]:
    """The collector off for the block (and on again after it, if it was on)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
