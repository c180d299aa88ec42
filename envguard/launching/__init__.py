"""Starting servers the way their profile says: environment, preflight, supervision, health."""
