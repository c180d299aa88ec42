"""Probes read the machine without changing it: processes, NCCL config files, server HTTP."""
