"""Every exception of the pack, with messages that say what is wrong and what to do."""

__all__ = [
    "GeneratedQueryError",
    "GraphStoreError",
    "InputDataError",
    "KGPlusError",
    "KGPlusSetupError",
    "ModelServerError",
    "NotFittedError",
    "QueryCheckError",
    "QueryTimeoutError",
    "StructuredOutputError",
    "SummarizationError",
    "UnsafeQueryError",
]


class KGPlusError(Exception):
    """Base class of this pack's errors."""


class KGPlusSetupError(KGPlusError, RuntimeError):
    """A default component is missing, corrupt or cannot be stored (the message names the fix)."""


class GraphStoreError(KGPlusError, RuntimeError):
    """A graph store URI is invalid, or the store is unreachable or locked."""


class InputDataError(KGPlusError, ValueError):
    """Input files or records are malformed (the message gives the position of the problem)."""


class NotFittedError(KGPlusError, ValueError, AttributeError):
    """A learned attribute (``name_``) was read before the component ran or was fitted (as scikit-learn's)."""


class ModelServerError(KGPlusError, RuntimeError):
    """A served model answered something that is not a reply of its API (e.g. an HTML page from a proxy)."""


class SummarizationError(KGPlusError, RuntimeError):
    """A summarizer produced no usable summary (e.g. the LLM returned an empty text). ``retryable`` is False when
    asking again would give the same result (a greedy local model's copy), so a builder does not ask again."""

    retryable: bool = True

    def __init__(self, *args: object, retryable: bool = True) -> None:
        super().__init__(*args)
        self.retryable = retryable


class StructuredOutputError(KGPlusError, ValueError):
    """The LLM did not produce valid JSON for the schema after all retries; ``raw`` holds its last text."""

    def __init__(self, message: str, raw: str) -> None:
        super().__init__(message)
        self.raw = raw


class GeneratedQueryError(KGPlusError, ValueError):
    """Something is wrong with a query an LLM wrote (SQL or Cypher); ``query`` holds it."""

    def __init__(self, message: str, query: str) -> None:
        super().__init__(message)
        self.query = query


class UnsafeQueryError(GeneratedQueryError):
    """A generated query was refused by the read-only guard and not run."""


class QueryCheckError(GeneratedQueryError):
    """A generated query ran but does not fit its question (a list where a count was asked)."""


class QueryTimeoutError(KGPlusError, TimeoutError):
    """A query ran longer than its timeout and was interrupted."""
