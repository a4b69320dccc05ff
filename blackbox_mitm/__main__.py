"""``python -m blackbox_mitm`` is the ``blackbox`` command."""

from blackbox_mitm.cli import main

if __name__ == "__main__":
    main()
