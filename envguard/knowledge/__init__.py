"""What envguard knows about the world: NCCL variables, tuning namespaces, server titles."""
