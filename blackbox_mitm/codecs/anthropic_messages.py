"""placeholder"""
PROVIDER = "anthropic"
PATH_SUFFIXES: tuple[str, ...] = ()
