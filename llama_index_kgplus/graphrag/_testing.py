"""A deterministic stand-in LLM for GraphRAG's prompts, for tests and cost benchmarks that must not depend on a
model: it answers each prompt by rules computed from the prompt itself. It is a real LlamaIndex ``LLM`` (a
``CustomLLM``), so everything else (schema validation, retries, executors, usage counting, storage) runs for
real; only the language understanding is replaced.

- extraction (``-Text-``): capitalised phrases are entities (described by their first sentence); entities in
  the same sentence are related; the limits stated in the prompt are respected;
- report (``-Entities-``): title from the first members, summary from their descriptions, one finding per
  member or relationship (at least the minimum the prompt asks for);
- map (``-Report-``): points scored by the words the question and the report share ("cannot answer", 0, when
  none);
- reduce (``-Key points-``): the key points as a list.

Example:

```python
llm = RuleBasedGraphRAGLLM()
index = GraphRAGIndex.from_defaults(tmp_dir, llm=llm)
```
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from pydantic import Field

_STOP = {
    "a",
    "an",
    "and",
    "as",
    "at",
    "but",
    "by",
    "for",
    "from",
    "he",
    "her",
    "his",
    "however",
    "if",
    "in",
    "it",
    "its",
    "many",
    "most",
    "of",
    "on",
    "one",
    "or",
    "she",
    "some",
    "such",
    "that",
    "the",
    "their",
    "there",
    "these",
    "they",
    "this",
    "those",
    "to",
    "was",
    "we",
    "were",
    "what",
    "when",
    "which",
    "while",
    "with",
    "you",
}
_PHRASE = re.compile(r"\b[A-Z][\w'-]*(?:\s+(?:of\s+|de\s+|the\s+)?[A-Z][\w'-]*)*")
_WORD = re.compile(r"[a-z0-9]+")


def _between(text: str, start: str, end: str) -> str:
    i = text.find(start)
    if i < 0:
        return ""
    i += len(start)
    j = text.find(end, i)
    return text[i : j if j >= 0 else len(text)].strip()


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3].rstrip() + "..."


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


class RuleBasedGraphRAGLLM(CustomLLM):
    """Answers GraphRAG's prompts by rules (see the module docstring); ``delay_seconds`` slows each call."""

    delay_seconds: float = Field(default=0.0, ge=0, description="Sleep before each reply (to test interruptions).")
    max_description_chars: int = Field(default=150, description="Longest description it writes.")

    @classmethod
    def class_name(cls) -> str:
        """The LlamaIndex component name."""
        return "RuleBasedGraphRAGLLM"

    @property
    def metadata(self) -> LLMMetadata:
        """A 32k context window, so no GraphRAG prompt is ever truncated."""
        return LLMMetadata(model_name="rule-based-graphrag", context_window=32768, num_output=1024)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """The rule-based reply to ``prompt`` (after ``delay_seconds``)."""
        if self.delay_seconds:
            time.sleep(self.delay_seconds)
        return CompletionResponse(text=self.reply(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        """The reply of :meth:`complete` as one chunk."""
        yield self.complete(prompt, formatted=formatted, **kwargs)

    # ------------------------------------------------------------------ the rules

    def reply(self, prompt: str) -> str:
        """The rule-based answer to ``prompt``: extraction, report, map or reduce, told apart by its sections."""
        if "-Text-" in prompt:
            return json.dumps(self.extract(prompt))
        if "-Entities-" in prompt:
            return json.dumps(self.report(prompt))
        if "-Report-" in prompt:
            return json.dumps(self.map(prompt))
        if "-Key points-" in prompt:
            return self.reduce(prompt)
        return "I can only answer GraphRAG prompts."

    def _limit(self, prompt: str, what: str, default: int) -> int:
        match = re.search(rf"at most (\d+) {what}", prompt)
        return int(match.group(1)) if match else default

    def extract(self, prompt: str) -> dict[str, Any]:
        """A valid extraction of the entities this fake knows in the chunk of ``prompt``."""
        text = _between(prompt, "-Text-\n", "\n-End of text-")
        max_e = self._limit(prompt, "entities", 10)
        max_r = self._limit(prompt, "relationships", 10)
        entities: dict[str, dict[str, Any]] = {}
        rels: dict[tuple[str, str], dict[str, Any]] = {}
        for sentence in _sentences(text):
            names = []
            for match in _PHRASE.finditer(sentence):
                name = match.group(0).strip()
                if name.lower() in _STOP or len(name) < 3:
                    continue
                key = name.lower()
                if key not in entities and len(entities) < max_e:
                    entities[key] = {
                        "name": name,
                        "type": "CONCEPT",
                        "description": _clip(sentence, self.max_description_chars),
                    }
                if key in entities and entities[key]["name"] not in names:
                    names.append(entities[key]["name"])
            for a, b in zip(names, names[1:]):
                pair = (a, b)
                if pair not in rels and len(rels) < max_r:
                    rels[pair] = {
                        "source": a,
                        "target": b,
                        "type": "MENTIONED_WITH",
                        "description": _clip(sentence, self.max_description_chars),
                        "strength": min(10, 1 + len(names)),
                    }
        return {"entities": list(entities.values()), "relationships": list(rels.values())}

    def report(self, prompt: str) -> dict[str, Any]:
        """A valid community report built from the entities named in ``prompt``."""
        rows = [r for r in _between(prompt, "-Entities-\n", "\n-Relationships-").splitlines() if r.strip()]
        rels = [
            r
            for r in _between(prompt, "-Relationships-\n", "\n-End of data-").splitlines()
            if r.strip() and r.strip() != "(none)"
        ]
        names = [r.split(" (", 1)[0] for r in rows]
        descs = [r.split("): ", 1)[1] if "): " in r else r for r in rows]
        lo = int(m.group(1)) if (m := re.search(r"findings: (\d+) to (\d+)", prompt)) else 5
        hi = int(m.group(2)) if m else 10
        sources = [(f"{n} in this community", d) for n, d in zip(names, descs)]
        sources += [(f"Link: {_clip(r.split(' (', 1)[0], 100)}", r) for r in rels]
        while len(sources) < lo:
            sources.append(
                (
                    f"Further note {len(sources) + 1} on {names[0] if names else 'the community'}",
                    descs[0] if descs else "No further data.",
                )
            )
        return {
            "title": _clip("Community of " + ", ".join(names[:3] or ["unnamed entities"]), 100),
            "summary": _clip(" ".join(descs[:3]) or "No description.", 500),
            "rating": float(min(10, len(rels) + 1)),
            "rating_explanation": f"{len(names)} entities and {len(rels)} relationships.",
            "findings": [{"summary": _clip(s, 120), "explanation": _clip(e, 300)} for s, e in sources[:hi]],
        }

    def map(self, prompt: str) -> dict[str, Any]:
        """A map-step answer: one key point per known entity named in ``prompt``."""
        question = _between(prompt, "-Question-\n", "\n-Report-")
        report = _between(prompt, "-Report-\n", "\n-End of report-")
        shared = _words(question) & _words(report)
        if not shared:
            return {"points": [{"description": "cannot answer", "score": 0}]}
        lines = [ln.lstrip("# ").strip() for ln in report.splitlines() if ln.strip()]
        relevant = [ln for ln in lines if _words(ln) & shared] or lines[:1]
        max_points = int(m.group(1)) if (m := re.search(r"at most (\d+), each", prompt)) else 3
        return {
            "points": [
                {"description": _clip(ln, 400), "score": min(100, 20 * len(_words(ln) & shared))}
                for ln in relevant[:max_points]
            ]
        }

    def reduce(self, prompt: str) -> str:
        """A reduce-step answer citing the key points of ``prompt``."""
        points = _between(prompt, "-Key points-\n", "\n-End of key points-").splitlines()
        kept = [re.sub(r"^- \(importance \d+\) ", "", p).strip() for p in points if p.strip()]
        return "\n".join(f"- {p}" for p in kept[:5])
