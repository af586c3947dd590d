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
    """Base class of this pack's errors.

    Example:

    ```python
    from llama_index_kgplus import KGPlusError, load_index

    try:
        index = load_index("./index")
    except KGPlusError as exc:  # every error of the pack, with a message that names the fix
        print(exc)
    ```
    """

    def __reduce__(self) -> tuple:
        # rebuilt without calling __init__, whose arguments differ per subclass (message, raw, query...): an error
        # raised in a worker process (spawn, Ray) reaches the caller whole, with its fields
        return _restore, (type(self), self.args, self.__dict__)


def _restore(cls: type[KGPlusError], args: tuple, state: dict) -> KGPlusError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class KGPlusSetupError(KGPlusError, RuntimeError):
    """A default component is missing, corrupt or cannot be stored (the message names the fix).

    Example:

    ```python
    from llama_index_kgplus import KGPlusSetupError
    from llama_index_kgplus.llm import llm_from_spec

    try:
        llm = llm_from_spec("qwen2.5-coder-1.5b")
    except KGPlusSetupError as exc:  # e.g. the model package is not installed: the message says which extra
        print(exc)
    ```
    """


class GraphStoreError(KGPlusError, RuntimeError):
    """A graph store URI is invalid, or the store is unreachable or locked.

    Example:

    ```python
    from llama_index_kgplus import GraphStoreError, open_graph_store

    try:
        store = open_graph_store("neo4j://localhost:7687")
    except GraphStoreError as exc:  # a bad URI, or the server is down
        print(exc)
    ```
    """


class InputDataError(KGPlusError, ValueError):
    """Input files or records are malformed (the message gives the position of the problem).

    Example:

    ```python
    from llama_index_kgplus import InputDataError, load_corpus

    try:
        documents = load_corpus("docs.jsonl")
    except InputDataError as exc:  # names the file, the line and what is wrong there
        print(exc)
    ```
    """


class NotFittedError(KGPlusError, ValueError, AttributeError):
    """A learned attribute (``name_``) was read before the component ran or was fitted (as scikit-learn's).

    Example:

    ```python
    from llama_index_kgplus import EntityLinker
    from llama_index_kgplus.errors import NotFittedError

    linker = EntityLinker.from_defaults(sources=["titles"])
    try:
        linker.dictionary_
    except NotFittedError:  # set when the linker has run on nodes
        nodes = linker(nodes)
    ```
    """


class ModelServerError(KGPlusError, RuntimeError):
    """A served model answered something that is not a reply of its API (e.g. an HTML page from a proxy).

    Example:

    ```python
    from llama_index_kgplus.errors import ModelServerError

    try:
        answer = engine.query("What is a virtual environment?")
    except ModelServerError as exc:  # e.g. a proxy answered with an HTML page
        print(exc)
    ```
    """


class SummarizationError(KGPlusError, RuntimeError):
    """A summarizer produced no usable summary (e.g. the LLM returned an empty text). ``retryable`` is False when
    asking again would give the same result (a greedy local model's copy), so a builder does not ask again.

    Example:

    ```python
    from llama_index_kgplus.errors import SummarizationError

    try:
        summary = summarizer.summarize(texts)
    except SummarizationError as exc:
        if not exc.retryable:  # asking again would give the same answer
            summary = texts[0]
    ```
    """

    retryable: bool = True

    def __init__(self, *args: object, retryable: bool = True) -> None:
        super().__init__(*args)
        self.retryable = retryable


class StructuredOutputError(KGPlusError, ValueError):
    """The LLM did not produce valid JSON for the schema after all retries; ``raw`` holds its last text.

    Example:

    ```python
    from llama_index_kgplus.errors import StructuredOutputError

    try:
        stats = graphrag_index.build(documents)
    except StructuredOutputError as exc:
        print(exc, exc.raw)  # the LLM's last text
    ```
    """

    def __init__(self, message: str, raw: str) -> None:
        super().__init__(message)
        self.raw = raw


class GeneratedQueryError(KGPlusError, ValueError):
    """Something is wrong with a query an LLM wrote (SQL or Cypher); ``query`` holds it.

    Example:

    ```python
    from llama_index_kgplus.errors import GeneratedQueryError

    try:
        response = cypher_engine.query("How many diseases does a virus cause?")
    except GeneratedQueryError as exc:  # refused, wrong or too slow: UnsafeQueryError, QueryCheckError, ...
        print(exc, exc.query)
    ```
    """

    def __init__(self, message: str, query: str) -> None:
        super().__init__(message)
        self.query = query


class UnsafeQueryError(GeneratedQueryError):
    """A generated query was refused by the read-only guard and not run.

    Example:

    ```python
    from llama_index_kgplus.errors import UnsafeQueryError

    try:
        rows = tables.run("DROP TABLE weather")
    except UnsafeQueryError as exc:  # refused by the read-only guard, never run
        print(exc.query)
    ```
    """


class QueryCheckError(GeneratedQueryError):
    """A generated query ran but does not fit its question (a list where a count was asked).

    Example:

    ```python
    from llama_index_kgplus.errors import QueryCheckError

    try:
        response = cypher_engine.query("How many diseases does a virus cause?")
    except QueryCheckError as exc:  # the query returned a list where a count was asked
        print(exc, exc.query)
    ```
    """


class QueryTimeoutError(KGPlusError, TimeoutError):
    """A query ran longer than its timeout and was interrupted.

    Example:

    ```python
    from llama_index_kgplus.errors import QueryTimeoutError

    try:
        response = table_engine.query("Which day had the most wind?")
    except QueryTimeoutError as exc:
        print(exc)
    ```
    """
