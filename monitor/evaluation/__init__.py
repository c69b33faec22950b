"""Evaluation: the scheduled comparison of changed windows, and of their days and weeks
(periods), with baselines; outcome metrics from merged summaries; batches of windows.
"""
