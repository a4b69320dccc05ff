"""Blackbox for mitmproxy: record an LLM agent's model calls at the network level, replay them offline, fork them.

Data flow, one subpackage per stage:

    request -> codecs (provider wire format <-> neutral step) -> cassette (hash chain)
            -> matcher (strict / sequence, divergence reports) -> codecs (synthesized response)

``session`` drives a run (record, replay, fork) in plain Python; ``proxy`` is the
thin mitmproxy layer; ``cli`` the ``blackbox`` command; ``testing`` the pytest plugin.
"""

__version__ = "0.1.0"
