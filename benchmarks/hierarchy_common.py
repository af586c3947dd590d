"""Shared pieces of the hierarchy benchmarks: the corpus, the chunker, the counting LLM wrapper, node files.

Not a benchmark itself; see hierarchy_build.py and hierarchy_retrieval.py.
"""

from __future__ import annotations

import json
import os
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

from llama_index.core import Document
from llama_index.core.base.llms.types import CompletionResponse
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode, TextNode

from llama_index_kgplus.llm import MeteredLLM
from llama_index_kgplus.llm._usage import usage_meter

BENCH_DATA = Path(os.environ.get("KGPLUS_BENCH_DATA", Path(__file__).resolve().parents[2] / "shared" / "bench-data"))
LONGDOCS = BENCH_DATA / "longdocs-squad"
OUT_DIR = Path(__file__).resolve().parent / "results" / "hierarchy"
CHUNK_SIZE, CHUNK_OVERLAP = 256, 20
# "dev": the articles the builders were developed on; "heldout": three of similar length never looked at
# while choosing defaults (issue 18's figures come from these).
ARTICLE_SETS = {
    "dev": ("Amazon_rainforest", "Black_Death", "Geology"),
    "heldout": ("Intergovernmental_Panel_on_Climate_Change", "Packet_switching", "Private_school"),
}


def load_articles(articles: str = "dev") -> list[Document]:
    """The articles of a set (``dev``, ``heldout``) or a comma-separated list of ids of longdocs-squad, as
    ``load_corpus`` would make them (doc_id, title)."""
    from llama_index_kgplus import load_corpus

    wanted = ARTICLE_SETS.get(articles) or tuple(articles.split(","))
    docs = {d.id_: d for d in load_corpus(LONGDOCS / "docs.jsonl")}
    missing = [a for a in wanted if a not in docs]
    if missing:
        raise SystemExit(f"not in longdocs-squad: {', '.join(missing)}")
    return [docs[a] for a in wanted]


def results_dir(articles: str) -> Path:
    """Where the build of an article set saves its nodes (the dev set keeps the original folder)."""
    return OUT_DIR if articles == "dev" else OUT_DIR.with_name(f"hierarchy-{articles.replace(',', '+')}")


def load_questions(doc_ids: set[str]) -> list[dict[str, Any]]:
    lines = (LONGDOCS / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [q for q in map(json.loads, lines) if q["doc_id"] in doc_ids]


def question_sets(
    doc_ids: list[str], singles: int = 50, pairs: int = 20, triples: int = 10, seed: str = "issue18"
) -> dict[str, list[dict[str, Any]]]:
    """Single-fact questions and questions that span paragraphs, drawn per article with a fixed seed.

    A spanning question joins 2 or 3 SQuAD questions about paragraphs of one article that are at least two
    paragraphs apart (so no 256-token chunk holds two of them), as one text: "Q1 Q2 [Q3]". Its ``answers`` is
    one list of gold strings per part; a retrieval is a hit when every part has a gold string in the text.
    """
    every = load_questions(set(doc_ids))
    sets: dict[str, list[dict[str, Any]]] = {"single": [], "pairs": [], "triples": []}
    for doc_id in doc_ids:
        rng = random.Random(f"{seed}:{doc_id}")
        own = [q for q in every if q["doc_id"] == doc_id]
        for q in rng.sample(own, min(singles, len(own))):
            sets["single"].append({**q, "answers": [q["answers"]], "parts": [q["id"]]})
        by_paragraph: dict[int, list[dict[str, Any]]] = {}
        for q in own:
            by_paragraph.setdefault(q["paragraph_index"], []).append(q)
        for name, size, wanted in (("pairs", 2, pairs), ("triples", 3, triples)):
            made: set[tuple[str, ...]] = set()
            if len(by_paragraph) < 2 * size - 1:  # too few paragraphs for parts two apart
                print(f"{doc_id}: too few paragraphs for {name}", file=sys.stderr)
                continue
            for _ in range(1000 * wanted):
                if len(made) == wanted:
                    break
                paragraphs = sorted(rng.sample(sorted(by_paragraph), size))
                if any(b - a < 2 for a, b in zip(paragraphs, paragraphs[1:])):
                    continue
                parts = [rng.choice(by_paragraph[i]) for i in paragraphs]
                key = tuple(q["id"] for q in parts)
                if key in made:
                    continue
                made.add(key)
                sets[name].append(
                    {
                        "question": " ".join(q["question"] for q in parts),
                        "answers": [q["answers"] for q in parts],
                        "doc_id": doc_id,
                        "parts": list(key),
                    }
                )
    for name, wanted in (("single", singles), ("pairs", pairs), ("triples", triples)):
        if len(sets[name]) < wanted * len(doc_ids):
            print(f"only {len(sets[name])} {name} questions could be drawn", file=sys.stderr)
    return sets


OVERVIEW_TEMPLATES = (
    "What topics does the article on {title} cover?",
    "Give an overview of {title}.",
    "Summarize the main points about {title}.",
)
MIN_ANSWER_CHARS = 4  # shorter gold strings ("1", "two") turn up in unrelated text


def overview_questions(doc_ids: list[str]) -> list[dict[str, Any]]:
    """Whole-article questions, scored by how much of the article the retrieved text reaches.

    Per article, one question per :data:`OVERVIEW_TEMPLATES` phrasing. Its ``paragraphs`` holds, for every
    paragraph of the article that has SQuAD questions, the gold answer strings of those questions that name
    this paragraph alone: at least :data:`MIN_ANSWER_CHARS` characters, and found (as whole words) in no other
    paragraph of any article of the set, since the index holds them all. A paragraph left without such a string
    is not counted. :func:`coverage` is the share of the counted paragraphs with one of their strings in the
    retrieved text. The articles have no section titles, so the annotators' answers stand in for "what the
    article covers", one paragraph at a time.
    """
    docs = {d["id"]: d for d in map(json.loads, (LONGDOCS / "docs.jsonl").read_text(encoding="utf-8").splitlines())}
    texts = {(d, i): p.lower() for d in doc_ids for i, p in enumerate(docs[d]["text"].split("\n\n"))}
    every = load_questions(set(doc_ids))
    made = []
    for doc_id in doc_ids:
        by_paragraph: dict[int, set[str]] = {}
        for q in (q for q in every if q["doc_id"] == doc_id):
            own = by_paragraph.setdefault(q["paragraph_index"], set())
            for answer in q["answers"]:
                if len(_bare(answer)) < MIN_ANSWER_CHARS:
                    continue
                found_in = [key for key, text in texts.items() if _has(text, answer)]
                if found_in == [(doc_id, q["paragraph_index"])]:
                    own.add(answer)
        paragraphs = [sorted(answers) for _, answers in sorted(by_paragraph.items()) if answers]
        if not paragraphs:
            print(f"{doc_id}: no paragraph has a string of its own; no whole-article questions", file=sys.stderr)
            continue
        for template in OVERVIEW_TEMPLATES:
            question = template.format(title=docs[doc_id]["title"])
            made.append({"question": question, "doc_id": doc_id, "paragraphs": paragraphs})
    return made


def _bare(answer: str) -> str:
    """``answer`` without the punctuation around it ("(UNFCCC)" -> "UNFCCC")."""
    return re.sub(r"^\W+|\W+$", "", answer)


def _has(text: str, answer: str) -> bool:
    """``answer`` (:func:`_bare`) in the lower-cased ``text`` as whole words ("sand" is not in "thousand")."""
    words = _bare(answer.lower())
    return bool(words) and re.search(rf"(?<![\w.]){re.escape(words)}(?![\w])", text) is not None


def coverage(text: str, paragraphs: list[list[str]]) -> float:
    """Share of ``paragraphs`` (each a list of gold strings) with one of its strings in ``text`` (any case,
    whole words)."""
    text = text.lower()
    return sum(any(_has(text, a) for a in answers) for answers in paragraphs) / len(paragraphs)


def is_hit(text: str, answers: list[list[str]]) -> bool:
    """Every part's question has one of its gold strings in ``text`` (case-insensitive substring, as SQuAD's
    answers are used everywhere else; the whole-article score matches whole words instead, see :func:`_has`)."""
    text = text.lower()
    return all(any(a.lower() in text for a in part) for part in answers)


class CountingLLM(MeteredLLM):
    """The package's usage meter (llama.cpp's own token figures, one count per call) plus the time spent in the LLM
    and its replies; it raises when the wrapped LLM reports no usage figures.

    It forwards the wrapped model's prompt templates, so both systems format prompts exactly as the model would.
    The package's bounded completions go through :meth:`complete` (with llama.cpp options); the code before issue
    38 called llama.cpp directly and reported those calls to the meter only (no seconds: the builders time their
    levels).
    """

    _seconds: float = PrivateAttr(default=0.0)
    _outputs: list = PrivateAttr(default_factory=list)

    @property
    def stats(self) -> dict:
        used = usage_meter(self).snapshot()
        return {"calls": used.llm_calls, "prompt_tokens": used.prompt_tokens,
                "completion_tokens": used.completion_tokens, "seconds": self._seconds}  # fmt: skip

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        start = time.perf_counter()
        response = super().complete(prompt, formatted=formatted, **kwargs)
        self._seconds += time.perf_counter() - start
        usage = (response.raw or {}).get("usage") if isinstance(response.raw, dict) else None
        if not isinstance(usage, dict):
            raise RuntimeError("the wrapped LLM reports no usage figures; this benchmark needs llama.cpp's")
        self._outputs.append(response.text)
        return response

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):
        raise NotImplementedError("the benchmark does not stream")


def save_nodes(path: Path, nodes: list[BaseNode]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for node in nodes:
            fh.write(json.dumps(node.to_dict(), ensure_ascii=False) + "\n")


def read_nodes(path: Path) -> list[TextNode]:
    return [TextNode.from_dict(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line]


def shingles(text: str, n: int = 8) -> set[tuple[str, ...]]:
    words = text.lower().split()
    return {tuple(words[i : i + n]) for i in range(max(0, len(words) - n + 1))}


def copy_ratio(summary: str, children: list[str]) -> float:
    """The largest share of the summary's 8-word shingles found in one child (1.0: a verbatim copy)."""
    own = shingles(summary)
    if not own:
        return 0.0
    return max((len(own & shingles(c)) / len(own) for c in children), default=0.0)
