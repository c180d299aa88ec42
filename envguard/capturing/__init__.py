"""envguard capture: a profile written from a live, known-good server."""
