"""Evaluation: a pure function from (profile, observation) to findings. No I/O here."""
