"""Serving objectives (latency percentiles, error rate, cost) per window and slice."""
