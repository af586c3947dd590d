"""An LLM selector for the router's close calls: a LlamaIndex ``BaseSelector`` (usable wherever
``LLMSingleSelector`` is, e.g. in ``RouterQueryEngine``) whose reply is JSON constrained by a schema, so a small
local model always returns a valid choice.

Example:

```python
selector = JSONSingleSelector(llm=llm)
result = selector.select(["Questions about one fact", "Questions about the whole corpus"], "Main themes?")
result.ind, result.reason
```
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.base_selector import BaseSelector, SelectorResult, SingleSelection
from llama_index.core.schema import QueryBundle
from llama_index.core.tools.types import ToolMetadata
from pydantic import BaseModel, Field, create_model

from llama_index_kgplus._structured import agenerate_json, generate_json

__all__ = ["ROUTE_DESCRIPTIONS", "JSONSingleSelector"]

#: What each route is for, as the LLM selector reads it
ROUTE_DESCRIPTIONS = {
    "local": "A specific fact or explanation found in one or a few passages of the documents.",
    "multihop": "A bridge question that chains facts about two or more named people, works or places "
    "(e.g. the birthplace of a film's director, or which of two things came first).",
    "global": "A question about the whole collection: its main themes, topics, trends or an overview.",
    "kg": "How two concepts or entities of the knowledge graph are related or connected.",
    "sql": "A calculation over table rows: a count, total, average, maximum, minimum or ranking of values.",
}

PROMPT = """Choose the one option that best describes how to answer the question.

{choices}

Question: {question}
Reply with JSON: {{"choice": <option number>, "reason": "<a few words>"}}"""


def _reply_model(n: int) -> type[BaseModel]:
    return create_model(
        "SelectorReply",
        choice=(int, Field(ge=1, le=n)),
        reason=(str, Field(default="", max_length=200)),
    )


class JSONSingleSelector(BaseSelector):
    """Selects one choice with any LLM through schema-constrained JSON (1-based ``choice`` in the reply,
    0-based ``index`` in the result, as LlamaIndex's selectors).

    Example:

    ```python
    JSONSingleSelector(llm=llm).select(list(ROUTE_DESCRIPTIONS.values()), "How is X related to Y?").ind
    ```
    """

    def __init__(self, llm: Any, max_tokens: int = 64) -> None:
        self.llm = llm
        self.max_tokens = max_tokens

    def _get_prompts(self) -> dict[str, Any]:
        return {}

    def _update_prompts(self, prompts: dict[str, Any]) -> None:
        pass

    @staticmethod
    def _prompt(choices: Sequence[ToolMetadata], query: QueryBundle) -> str:
        text = "\n".join(f"({i}) {' '.join(c.description.split())}" for i, c in enumerate(choices, 1))
        return PROMPT.format(choices=text, question=query.query_str)

    @staticmethod
    def _result(reply: Any) -> SelectorResult:
        return SelectorResult(selections=[SingleSelection(index=reply.choice - 1, reason=reply.reason)])

    def _select(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> SelectorResult:
        reply = generate_json(
            self.llm, self._prompt(choices, query), _reply_model(len(choices)), max_tokens=self.max_tokens
        )
        return self._result(reply)

    async def _aselect(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> SelectorResult:
        reply = await agenerate_json(
            self.llm, self._prompt(choices, query), _reply_model(len(choices)), max_tokens=self.max_tokens
        )
        return self._result(reply)
