"""Baselines: a reference dataset profiled once (in memory, streamed past memory, or on Spark)
and stored for every comparison.
"""
