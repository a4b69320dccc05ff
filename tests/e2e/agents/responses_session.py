"""Several runs of responses_agent.py in one process: one import of the ``openai`` SDK for all of them.

    python responses_session.py MODE QUESTION [MODE QUESTION ...]

Each pair is a responses_agent.py ``MODE QUESTION``, run in order in one recorded session; their outputs follow one
another on stdout. The exit code is the first run's that is not 0 (the runs after it are not made), else 0.
"""

from __future__ import annotations

import sys

import responses_agent  # beside this file: the script's folder is sys.path[0]


def main(pairs: list[str]) -> int:
    for mode, question in zip(pairs[::2], pairs[1::2], strict=True):
        sys.argv = [responses_agent.__file__, mode, question]
        code = responses_agent.main()
        if code:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
