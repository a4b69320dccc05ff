"""Tape tests: replay a recorded run under pytest (``blackbox_tape`` marker and fixture, ``replay_test``)."""
