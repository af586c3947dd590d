"""The LLM-judge steps the RAGAS-style metrics are built from, each schema-constrained and inspectable.

- :func:`extract_statements`: break a text into short standalone factual statements.
- :func:`judge_statements`: for each statement, does the reference text support it (yes/no, with a reason)?
- :func:`generate_questions`: questions the answer would answer, plus whether the answer is noncommittal.
- :func:`judge_contexts`: for each retrieved context, was it useful to arrive at the reference answer?

The prompts follow the definitions of RAGAS (Es et al., 2023, "RAGAS: Automated Evaluation of Retrieval Augmented
Generation", arXiv:2309.15217, and the ragas 0.2-0.4 metric documentation), rewritten short enough for small local
models; verdicts are asked per statement in one call, and a reply with the wrong number of verdicts is retried.
"""

from __future__ import annotations

from typing import Literal

from llama_index.core.llms import LLM
from pydantic import BaseModel, Field

from llama_index_kgplus.structured import StructuredOutputError, agenerate_json

MAX_STATEMENTS = 12


class _Statements(BaseModel):
    statements: list[str] = Field(max_length=MAX_STATEMENTS, description="short standalone factual statements")


class _Verdict(BaseModel):
    reason: str = Field(max_length=200)
    verdict: Literal["yes", "no"]


class _Verdicts(BaseModel):
    verdicts: list[_Verdict] = Field(max_length=MAX_STATEMENTS + 8)


class _Questions(BaseModel):
    questions: list[str] = Field(min_length=1, max_length=5)
    noncommittal: bool = Field(description="true if the answer is evasive, vague or says it does not know")


def _numbered(items: list[str]) -> str:
    return "\n".join(f"{i}. {item}" for i, item in enumerate(items, 1))


async def extract_statements(llm: LLM, question: str, text: str) -> list[str]:
    prompt = (
        "Break the answer below into short, standalone factual statements (at most "
        f"{MAX_STATEMENTS}). Replace pronouns with what they refer to. Use only what the answer says.\n\n"
        f"Question: {question}\nAnswer: {text}\n\n"
        'Reply as JSON: {"statements": ["...", "..."]}'
    )
    result = await agenerate_json(llm, prompt, _Statements, max_tokens=768)
    return [s.strip() for s in result.statements if s.strip()]


async def judge_statements(
    llm: LLM, statements: list[str], reference: str, *, reference_name: str = "context", max_retries: int = 2
) -> list[dict]:
    """One ``{"statement", "verdict": bool, "reason"}`` per statement."""
    if not statements:
        return []
    prompt = (
        f"Read the {reference_name} and judge each numbered statement: answer \"yes\" if the statement can be "
        f"directly inferred from the {reference_name}, \"no\" otherwise. Give one verdict per statement, in order, "
        f"exactly {len(statements)} verdicts.\n\n"
        f"{reference_name.capitalize()}:\n{reference}\n\nStatements:\n{_numbered(statements)}\n\n"
        'Reply as JSON: {"verdicts": [{"reason": "...", "verdict": "yes"}, ...]}'
    )
    for _ in range(max_retries + 1):
        result = await agenerate_json(llm, prompt, _Verdicts, max_tokens=160 * len(statements) + 64)
        if len(result.verdicts) == len(statements):
            return [
                {"statement": s, "verdict": v.verdict == "yes", "reason": v.reason}
                for s, v in zip(statements, result.verdicts)
            ]
    raise StructuredOutputError(
        f"The judge gave {len(result.verdicts)} verdicts for {len(statements)} statements after "
        f"{max_retries + 1} tries.",
        result.model_dump_json(),
    )


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
        result = await agenerate_json(llm, prompt, _Verdict, max_tokens=200)
        verdicts.append({"context": context, "verdict": result.verdict == "yes", "reason": result.reason})
    return verdicts
