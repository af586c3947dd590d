import sys

from llama_index_kgplus.cli import main

sys.exit(main())
