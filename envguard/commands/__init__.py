"""One module per command verb: a library function returning a result, and its click command."""
