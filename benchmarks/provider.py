"""The upstream for the benchmarks: ``examples/fake_provider.py`` in a process of its own, with TCP_NODELAY.

The example server writes a response's headers and its body in two ``send``
calls. With Nagle's algorithm on, the second waits for the client's delayed ACK
(40 ms on Linux) whenever a connection carries one call at a time — a stall no
real provider has, which would swamp every per-call figure. The handler's own
switch (``disable_nagle_algorithm``, from ``socketserver.StreamRequestHandler``)
turns it off; nothing else about the provider changes.

    python benchmarks/provider.py --port N      (prints "fake provider listening on URL")
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

import fake_provider  # noqa: E402

fake_provider._Handler.disable_nagle_algorithm = True

if __name__ == "__main__":
    sys.exit(fake_provider.main())
