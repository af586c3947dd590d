"""The LLM-judge steps the RAGAS-style metrics are built from, each schema-constrained and inspectable.

- :func:`extract_statements`: break a text into short standalone factual statements (one sentence each).
- :func:`judge_statements`: for each statement, does the reference text support it (yes/no, with a reason)?
- :func:`generate_questions`: questions the answer would answer, plus whether the answer is noncommittal.
- :func:`judge_contexts`: for each retrieved context, was it useful to arrive at the reference answer?

The prompts follow the definitions of RAGAS (Es et al., 2023, "RAGAS: Automated Evaluation of Retrieval Augmented
Generation", arXiv:2309.15217, and the ragas 0.2-0.4 metric documentation), rewritten short enough for small local
models. Verdicts are asked one statement per call: asked for a list, small models lose count of the statements
or loop on the same verdict, and one long context then makes them say "no" to statements it contains verbatim.
The reference leads each prompt, so llama.cpp reuses its evaluated prefix from one statement to the next.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Literal

from llama_index.core.llms import LLM
from pydantic import BaseModel, Field

from llama_index_kgplus._structured import agenerate_json

MAX_STATEMENTS = 12


# Each string has a length bound too: under the local grammar a small model that loops inside a string stops there
# instead of running to the token limit.
class _Statements(BaseModel):
    statements: list[Annotated[str, Field(max_length=300)]] = Field(
        max_length=MAX_STATEMENTS, description="short standalone factual statements"
    )


class _Verdict(BaseModel):
    reason: str = Field(max_length=200)
    verdict: Literal["yes", "no"]


class _Questions(BaseModel):
    questions: list[Annotated[str, Field(max_length=200)]] = Field(min_length=1, max_length=5)
    noncommittal: bool = Field(description="true if the answer is evasive, vague or says it does not know")


@dataclass
class Statements:
    """What :func:`extract_statements` keeps, and what it drops: statements whose words are mostly not in the
    text (the model invented them) and repeats."""

    kept: list[str]
    dropped: list[str]


_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "the and are was were been being for with that this these those from into its has have had can may not does "
    "did which what who how when where why also than then there their they them such other any all".split()
)


def _stems(text: str) -> set[str]:
    """Content words cut to five letters: a crude stemmer that is enough to tell "effects" from "radiation"."""
    return {w[:5] for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOPWORDS}


def grounded(statement: str, source: str, min_share: float = 0.5) -> bool:
    """At least ``min_share`` of the statement's content words occur in ``source``."""
    words = _stems(statement)
    return not words or len(words & _stems(source)) / len(words) >= min_share


async def extract_statements(llm: LLM, question: str, text: str) -> Statements:
    """The statements the LLM finds in ``text``, each multi-sentence one split into its sentences (small models
    often return the answer back as one statement). Small models also invent statements when the text is short:
    those whose words are mostly in neither the text nor the question are dropped; if none is left, the text's
    own sentences are the statements."""
    from llama_index_kgplus._text import split_sentences

    prompt = (
        "Break the answer below into short, standalone factual statements (at most "
        f"{MAX_STATEMENTS}). Replace pronouns with what they refer to. Use only what the answer says.\n\n"
        f"Question: {question}\nAnswer: {text}\n\n"
        'Reply as JSON: {"statements": ["...", "..."]}'
    )
    result = await agenerate_json(llm, prompt, _Statements, max_tokens=768)
    kept: list[str] = []
    dropped: list[str] = []
    for sentence in (s for statement in result.statements for s in split_sentences(statement)):
        ok = sentence not in kept and grounded(sentence, f"{question}\n{text}")
        (kept if ok else dropped).append(sentence)
    return Statements(kept or split_sentences(text), dropped)


async def _verdict(llm: LLM, prompt: str) -> dict:
    """``{"verdict": bool, "reason"}`` for a prompt asking one yes/no question."""
    result = await agenerate_json(llm, prompt, _Verdict, max_tokens=200)
    return {"verdict": result.verdict == "yes", "reason": result.reason}


async def judge_statements(
    llm: LLM, statements: list[str], reference: str, *, reference_name: str = "context"
) -> list[dict]:
    """One ``{"statement", "verdict": bool, "reason"}`` per statement."""
    verdicts = []
    for statement in statements:
        prompt = (
            f'Read the {reference_name}, then judge the statement after it: answer "yes" if the statement can be '
            f'directly inferred from the {reference_name}; answer "no" if it adds any fact the {reference_name} '
            "does not state, even a plausible one (naming the same things is not enough).\n\n"
            f"{reference_name.capitalize()}:\n{reference}\n\nStatement: {statement}\n\n"
            'Reply as JSON: {"reason": "...", "verdict": "yes"}'
        )
        verdicts.append({"statement": statement, **await _verdict(llm, prompt)})
    return verdicts


async def generate_questions(llm: LLM, answer: str, n: int = 3) -> tuple[list[str], bool]:
    prompt = (
        f"Write {n} different questions that the answer below answers, and say whether the answer is noncommittal "
        "(evasive, vague, or saying it does not know).\n\n"
        f"Answer: {answer}\n\n"
        'Reply as JSON: {"questions": ["...", "..."], "noncommittal": false}'
    )
    result = await agenerate_json(llm, prompt, _Questions, max_tokens=400)
    return [q.strip() for q in result.questions if q.strip()][:n], result.noncommittal


async def judge_contexts(llm: LLM, question: str, contexts: list[str], reference_answer: str) -> list[dict]:
    """One ``{"context", "verdict": bool, "reason"}`` per context: useful to arrive at the reference answer?"""
    verdicts = []
    for context in contexts:
        prompt = (
            "Given the question, the reference answer and one retrieved context, was the context useful in "
            'arriving at the reference answer? Verdict "yes" or "no".\n\n'
            f"Question: {question}\nReference answer: {reference_answer}\nContext: {context}\n\n"
            'Reply as JSON: {"reason": "...", "verdict": "yes"}'
        )
        verdicts.append({"context": context, **await _verdict(llm, prompt)})
    return verdicts
