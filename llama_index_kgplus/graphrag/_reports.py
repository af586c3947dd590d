"""Community reports: one structured report per community, from its entities and relationships.

A report has a ``title``, a ``summary``, a ``rating`` (0-10 impact), a ``rating_explanation`` and 5-10
``findings`` (each a ``summary`` and an ``explanation``), constrained by a JSON schema (a llama.cpp grammar
for the local model). The report's input, the community context, is a token-bounded table of the members
(most connected first) and their relationships; its :meth:`CommunityReportGenerator.fingerprint` hashes the
members and descriptions in that context and the generator's settings, so a report is regenerated exactly when
its input changes.

Example:

```python
reporter = CommunityReportGenerator.from_defaults(llm=llm)
context = reporter.context(community, entities, relationships)
report = reporter.generate(context)
report.title, report.rating, len(report.findings)
```
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from llama_index.core.llms import LLM
from pydantic import BaseModel, Field, PrivateAttr, create_model

from llama_index_kgplus._structured import agenerate_json
from llama_index_kgplus._sync import run_sync
from llama_index_kgplus.graphrag._communities import Community
from llama_index_kgplus.graphrag._merge import Entity, Relationship
from llama_index_kgplus.graphrag._prompts import REPORT_PROMPT
from llama_index_kgplus.graphrag._schema import bounded_text


class Finding(BaseModel):
    """One key insight of a report."""

    summary: bounded_text(120) = Field(description="The insight in one line.")  # type: ignore[valid-type]
    explanation: bounded_text(300) = Field(description="The insight explained from the data.")  # type: ignore[valid-type]


class CommunityReport(BaseModel):
    """The structured report of one community."""

    title: bounded_text(100) = Field(description="Short title naming the key entities.")  # type: ignore[valid-type]
    summary: bounded_text(500) = Field(description="Executive summary of the community.")  # type: ignore[valid-type]
    rating: float = Field(ge=0, le=10, description="Impact of the community, 0 to 10.")
    rating_explanation: bounded_text(200) = Field(description="One sentence explaining the rating.")  # type: ignore[valid-type]
    findings: list[Finding] = Field(min_length=1, max_length=10, description="Key insights.")

    def to_text(self) -> str:
        """The report as Markdown (what the map step reads)."""
        lines = [
            f"# {self.title}",
            "",
            self.summary,
            "",
            f"Impact rating: {self.rating:g}/10. {self.rating_explanation}",
        ]
        for finding in self.findings:
            lines += ["", f"## {finding.summary}", finding.explanation]
        return "\n".join(lines)


@lru_cache(maxsize=16)
def _schema_model(min_findings: int, max_findings: int, max_chars: int) -> type[CommunityReport]:
    """The report schema with this generator's limits; ``max_chars`` bounds the summary and each explanation
    (the finding summary gets a quarter of it), which bounds the reply's length for a small model."""
    finding = create_model(
        "ReportFinding",
        __base__=Finding,
        summary=(bounded_text(min(120, max(20, max_chars // 4))), Field(description="The insight in one line.")),
        explanation=(bounded_text(min(300, max_chars)), Field(description="The insight explained from the data.")),
    )
    return create_model(
        "Report",
        __base__=CommunityReport,
        summary=(bounded_text(min(500, max_chars * 2)), Field(description="Executive summary of the community.")),
        findings=(list[finding], Field(min_length=min_findings, max_length=max_findings, description="Key insights.")),  # type: ignore[valid-type]
    )


@dataclass(frozen=True)
class ReportContext:
    """The input of one report: the community, the member and relationship tables actually shown."""

    community_id: str
    level: int
    entity_ids: tuple[str, ...]
    relationship_ids: tuple[str, ...]
    entities_text: str
    relationships_text: str


def _tokens(text: str) -> int:
    from llama_index.core.utils import get_tokenizer

    return len(get_tokenizer()(text))


class CommunityReportGenerator(BaseModel):
    """Writes :class:`CommunityReport` objects with an LLM under a JSON schema; see the module docstring.

    Example:

    ```python
    reporter = CommunityReportGenerator.from_defaults(llm=llm, max_context_tokens=1200)
    report = reporter.generate(reporter.context(community, entities, relationships))
    ```
    """

    max_context_tokens: int = Field(
        default=1500, ge=100, description="Token budget of the member and relationship tables."
    )
    max_tokens: int = Field(default=1200, ge=128, description="Token limit of one report reply.")
    min_findings: int = Field(default=5, ge=1, le=10, description="Fewest findings a report must have.")
    max_findings: int = Field(default=10, ge=1, le=10, description="Most findings a report may have.")
    max_chars: int = Field(
        default=300,
        ge=40,
        le=300,
        description="Longest finding explanation in characters (the summary may be twice as long, a finding's "
        "one-line summary a quarter); lower it to make a small local model faster.",
    )
    max_attempts: int = Field(
        default=2, ge=1, description="Attempts per report (each failure is repaired, then retried with feedback)."
    )

    _llm: LLM | None = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "CommunityReportGenerator"

    @classmethod
    def from_defaults(cls, llm: LLM | None = None, **kwargs: Any) -> CommunityReportGenerator:
        """A generator bound to ``llm`` (default: ``Settings.llm``)."""
        from llama_index.core import Settings

        reporter = cls(**kwargs)
        reporter._llm = llm or Settings.llm
        return reporter

    def context(
        self, community: Community, entities: Mapping[str, Entity], relationships: Sequence[Relationship]
    ) -> ReportContext:
        """The member and relationship tables of ``community`` within ``max_context_tokens``.

        Members come most connected first (degree inside the community), relationships heaviest first; the
        entity table may use at most half the budget, relationships the rest, then members fill what is left.
        """
        members = set(community.entity_ids)
        inner = sorted(
            (r for r in relationships if r.source in members and r.target in members),
            key=lambda r: (-r.weight, r.source, r.target),
        )
        degree: Counter[str] = Counter()
        for r in inner:
            degree[r.source] += 1
            degree[r.target] += 1
        ordered = sorted((e for e in community.entity_ids if e in entities), key=lambda e: (-degree[e], e))

        def entity_row(eid: str) -> str:
            e = entities[eid]
            return f"{e.name} ({e.type}): {e.description or 'no description'}"

        def rel_row(r: Relationship) -> str:
            return f"{entities[r.source].name} -> {entities[r.target].name} ({r.type}, weight {r.weight:g}): {r.description}"

        budget = self.max_context_tokens
        shown_e: list[str] = []
        used = 0
        for eid in ordered:
            cost = _tokens(entity_row(eid)) + 1
            if used + cost > budget // 2 and shown_e:
                break
            shown_e.append(eid)
            used += cost
        shown_r: list[Relationship] = []
        for r in inner:
            cost = _tokens(rel_row(r)) + 1
            if used + cost > budget:
                break
            shown_r.append(r)
            used += cost
        for eid in ordered[len(shown_e) :]:
            cost = _tokens(entity_row(eid)) + 1
            if used + cost > budget:
                break
            shown_e.append(eid)
            used += cost
        return ReportContext(
            community_id=community.id,
            level=community.level,
            entity_ids=tuple(shown_e),
            relationship_ids=tuple(r.id for r in shown_r),
            entities_text="\n".join(entity_row(e) for e in shown_e),
            relationships_text="\n".join(rel_row(r) for r in shown_r) or "(none)",
        )

    def fingerprint(self, community: Community, context: ReportContext) -> str:
        """Hash of what the report is written from: the members and relationships shown (ids, names,
        descriptions, weights), the generator's settings and its prompt.

        The same fingerprint means the same prompt, so regenerating would only repeat the report. A member that
        the token budget leaves out of a large community's context therefore does not trigger a new report.
        """
        payload = {
            "members": list(context.entity_ids),
            "relationships": list(context.relationship_ids),
            "entities_text": context.entities_text,
            "relationships_text": context.relationships_text,
            "settings": self.model_dump(exclude={"max_attempts"}),
            "prompt": REPORT_PROMPT.get_template(),
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:24]

    def prompt(self, context: ReportContext) -> str:
        """The report prompt for one community's entities and relationships."""
        return REPORT_PROMPT.format(
            min_findings=self.min_findings,
            max_findings=self.max_findings,
            entities=context.entities_text,
            relationships=context.relationships_text,
        )

    async def agenerate(self, context: ReportContext, *, llm: LLM | None = None) -> CommunityReport:
        """The report of ``context``; raises ``StructuredOutputError`` after all attempts."""
        from llama_index.core import Settings

        model = _schema_model(self.min_findings, max(self.min_findings, self.max_findings), self.max_chars)
        report = await agenerate_json(
            llm or self._llm or Settings.llm,
            self.prompt(context),
            model,
            max_retries=self.max_attempts - 1,
            max_tokens=self.max_tokens,
            repair_truncated=True,
        )
        return CommunityReport.model_validate(report.model_dump())

    def generate(self, context: ReportContext, *, llm: LLM | None = None) -> CommunityReport:
        """Sync twin of :meth:`agenerate`."""
        return run_sync(self.agenerate(context, llm=llm))
