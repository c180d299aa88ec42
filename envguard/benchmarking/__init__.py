"""Running benchmarks: metrics from a command's output, and the built-in throughput probe."""
