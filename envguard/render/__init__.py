"""Rendering: text for people, JSON for machines. Values arrive already redacted."""
