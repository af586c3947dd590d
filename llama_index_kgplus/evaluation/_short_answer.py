"""Judge-free metrics for datasets with short gold answers (SQuAD's official normalisation).

- ``exact_match``: 1 when the normalised answer equals a normalised gold answer.
- ``token_f1``: the best token-overlap F1 against any gold answer.
- ``answer_contains``: 1 when a normalised gold answer appears, on word boundaries, inside the normalised answer
  (long answers from an LLM rarely match exactly, but they contain the fact).

Normalisation (SQuAD v1.1 ``evaluate-v1.1.py``): lower case, punctuation removed, the articles a/an/the removed,
whitespace collapsed.

Example:

```python
token_f1("It was founded in 1066 by William.", ["1066"])        # 0.25
answer_contains("It was founded in 1066 by William.", ["1066"])  # 1.0
```
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's answer normalisation."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def _golds(golds: Sequence[str]) -> list[str]:
    kept = [g for g in golds if isinstance(g, str) and normalize_answer(g)]
    if not kept:
        raise ValueError("No gold answer with any word left after normalisation.")
    return kept


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    answer = normalize_answer(prediction)
    return float(any(answer == normalize_answer(g) for g in _golds(golds)))


def _f1(prediction: str, gold: str) -> float:
    predicted, expected = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = sum((Counter(predicted) & Counter(expected)).values())
    if not common:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, golds: Sequence[str]) -> float:
    """SQuAD's token F1 of ``prediction`` against the best of ``golds`` (answers normalized: lower case, no
    punctuation or articles).

    ```python
    token_f1("in the year 1889", ["1889"])  # 0.5
    ```
    """
    return max(_f1(prediction, g) for g in _golds(golds))


def answer_contains(prediction: str, golds: Sequence[str]) -> float:
    """1.0 when the normalized ``prediction`` contains one of the normalized ``golds`` as whole words, else 0.0.

    ```python
    answer_contains("It opened in 1889.", ["1889"])  # 1.0
    ```
    """
    answer = f" {normalize_answer(prediction)} "
    return float(any(f" {normalize_answer(g)} " in answer for g in _golds(golds)))


SHORT_ANSWER_METRICS = {"exact_match": exact_match, "token_f1": token_f1, "answer_contains": answer_contains}
