"""The workbench's server process: ``python -m llama_index_kgplus.ui._serve STREAMLIT-OPTIONS...``.

It imports the pack and opens the sources of ``$KGPLUS_UI_CONFIG`` *before* Streamlit listens (about 5 s of
imports on 2 cores), then runs ``streamlit run app.py`` in this process: the first page a browser asks for finds
everything loaded and renders at once. The models still load on the first question.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP = Path(__file__).resolve().parent / "app.py"


def main(argv: list[str] | None = None) -> int:
    """Warm up, then hand over to Streamlit's command line with ``run app.py`` and ``argv``."""
    from llama_index_kgplus.ui import Workbench
    from llama_index_kgplus.ui._config import CONFIG_ENV

    raw = os.environ.get(CONFIG_ENV)
    if raw:
        Workbench.shared(raw).warm_sources()  # imports the engines' modules, opens the sources once
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(APP), *(sys.argv[1:] if argv is None else argv)]
    return int(cli.main(standalone_mode=False) or 0)


if __name__ == "__main__":
    sys.exit(main())
