"""Benchmarks for Blackbox (issue #8): what the proxy costs, side by side with the alternatives.

Run them with ``make bench`` or ``python benchmarks/run.py [--quick] [--write docs/benchmarks.md]``;
``run.py`` explains the sections, and each module measures one of them.
"""
