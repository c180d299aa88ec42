"""The results ledger: benchmark results with the exact setup they ran on (SQLite)."""
