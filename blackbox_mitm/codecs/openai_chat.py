"""placeholder"""
PROVIDER = "openai"
PATH_SUFFIXES: tuple[str, ...] = ()
