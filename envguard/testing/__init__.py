"""Builders for tests and the demo: a stand-in server whose process tree looks like SGLang's."""
