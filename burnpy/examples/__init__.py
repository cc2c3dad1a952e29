"""Runnable examples: ``python -m burnpy.examples.digits``."""
