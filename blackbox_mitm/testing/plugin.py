"""The pytest plugin (pytest11 entry point ``blackbox``)."""
