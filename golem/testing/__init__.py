"""Fakes at the outer edge, shipped for tests and for newcomers' experiments.

Nothing here is used by the daemon itself; tests use these to drive the real
runtime (scripted tick handlers, a harness that runs the real CLI with them).
"""
