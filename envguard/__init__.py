"""envguard: keep GPU inference servers on the environment they were tuned for."""

__version__ = "0.1.0"
