"""Profiles: the versioned TOML description of a tuned setup (schema, loading, caching)."""
