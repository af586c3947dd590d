"""Paths to the small, openly licensed sample data bundled with the package (see ``data/sample/LICENSES.md``).

Example:

```python
from llama_index_kgplus import build_index, load_corpus
from llama_index_kgplus.sample import SAMPLE_DOCS

index = build_index(load_corpus(SAMPLE_DOCS), "./index")
```
"""

from llama_index_kgplus._deprecation import deprecated_names
from llama_index_kgplus._public import set_public_module
from llama_index_kgplus._sample import (
    SAMPLE_DOCS,
    SAMPLE_KG_NODES,
    SAMPLE_KG_RELATIONSHIPS,
    SAMPLE_MULTIHOP_DOCS,
    SAMPLE_MULTIHOP_QUESTIONS,
    SAMPLE_WEATHER_TABLE,
    sample_glossary_path,
)

__all__ = [
    "SAMPLE_DOCS",
    "SAMPLE_KG_NODES",
    "SAMPLE_KG_RELATIONSHIPS",
    "SAMPLE_MULTIHOP_DOCS",
    "SAMPLE_MULTIHOP_QUESTIONS",
    "SAMPLE_WEATHER_TABLE",
    "sample_glossary_path",
]
set_public_module(__name__, globals(), __all__)

# Names that left the public API: importable for one more release, with a DeprecationWarning.
__getattr__ = deprecated_names(
    __name__,
    {
        "SAMPLE_DIR": "llama_index_kgplus._sample:SAMPLE_DIR",
        "SAMPLE_STOCKS_TABLE": "llama_index_kgplus._sample:SAMPLE_STOCKS_TABLE",
    },
)
