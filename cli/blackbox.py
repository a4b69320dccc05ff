"""Run the ``blackbox`` command from a checkout: ``python cli/blackbox.py --help``.

The installed console script ``blackbox`` (``make setup`` / ``pip install -e .``)
is the same thing; this file only calls ``blackbox_mitm.cli.main``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from blackbox_mitm.cli import main

if __name__ == "__main__":
    main()
