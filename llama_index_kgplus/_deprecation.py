"""Names that left the public API stay importable from their old path for one release, with a warning.

A module that lost public names ends with a module ``__getattr__`` (PEP 562) built from an explicit mapping
``{old name: "new.module.path:attribute"}``::

    __getattr__ = deprecated_names(__name__, {"RetrievalMode": "llama_index_kgplus.hierarchy:HierarchicalRetrievalMode"})

Reading an old name imports its target and warns (once per ``import`` statement or attribute read) with a :class:`DeprecationWarning` that names
the replacement (a public name), or says that the name is internal and goes in the next release (a name whose
new home is private). Any other unknown name raises :class:`AttributeError` as usual.
"""

from __future__ import annotations

import importlib
import inspect
import warnings
from collections.abc import Callable, Mapping
from typing import Any


def _is_private(target: str) -> bool:
    module_path, _, attribute = target.partition(":")
    return any(part.startswith("_") for part in [*module_path.split("."), attribute])


def deprecation_message(module_name: str, name: str, target: str) -> str:
    """The warning for reading ``module_name.name``, whose new home is ``target`` (``"module.path:attribute"``)."""
    module_path, _, attribute = target.partition(":")
    old = f"{module_name}.{name}"
    if _is_private(target):
        return (
            f"{old} is internal and will be removed from {module_name} in the next release "
            f"(it now lives in {module_path} as {attribute}, which may change without notice)."
        )
    if attribute != name:
        return f"{old} is deprecated: use {attribute} (from {module_path} import {attribute})."
    return f"{old} is deprecated: import it from {module_path} (from {module_path} import {attribute})."


def deprecated_names(
    module_name: str, moved: Mapping[str, str], imported_on_first_use: Mapping[str, str] | None = None
) -> Callable[[str], Any]:
    """A module ``__getattr__`` that hands out each old name of ``moved`` from its new home with a warning.

    :param module_name: the ``__name__`` of the module that lost the names.
    :param moved: every old name and its new home as ``"module.path:attribute"``.
    :param imported_on_first_use: public names of the module that need an optional extra, as
        ``"module.path:attribute"``: imported when first read, without a warning.
    """

    def __getattr__(name: str) -> Any:
        if imported_on_first_use and name in imported_on_first_use:
            module_path, _, attribute = imported_on_first_use[name].partition(":")
            return getattr(importlib.import_module(module_path), attribute)
        target = moved.get(name)
        if target is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        # `from package import name` asks twice: importlib's _handle_fromlist checks hasattr first, then the
        # import statement reads the name; warn on the read only, so one import gives one warning
        frame = inspect.currentframe()
        caller = frame.f_back if frame is not None else None
        if caller is None or caller.f_code.co_name != "_handle_fromlist":
            warnings.warn(deprecation_message(module_name, name, target), DeprecationWarning, stacklevel=2)
        module_path, _, attribute = target.partition(":")
        return getattr(importlib.import_module(module_path), attribute)

    return __getattr__
