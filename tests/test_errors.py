"""The pack's exceptions as a caller receives them from a worker process (spawn, Ray): pickled and back whole."""

from __future__ import annotations

import inspect
import pickle

import pytest

from llama_index_kgplus import errors

ERRORS = [getattr(errors, name) for name in errors.__all__]


def example(cls: type[BaseException]) -> BaseException:
    """An instance built with a distinct value for every required argument of its constructor."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    required = [p.name for p in params if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
    return cls(*[f"the {name}" for name in required]) if required else cls("the message")


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_every_error_comes_back_from_pickle_with_its_message_and_fields(cls):
    exc = example(cls)
    exc.__notes__ = ["a note"]
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is cls and str(back) == str(exc)
    assert vars(back) == vars(exc)
