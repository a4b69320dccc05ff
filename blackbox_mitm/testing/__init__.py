"""Tape tests: replay a recorded run under pytest (``blackbox_tape`` marker and fixture, ``replay_test``)."""

from blackbox_mitm.testing.tape import Tape, TapeMismatch, replay_test

__all__ = ["Tape", "TapeMismatch", "replay_test"]
