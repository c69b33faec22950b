"""Results: the stored judgements (drift, outcome, SLO, estimate) of a window or a period, and
their documents.

Names: a *summary* is a mergeable statistic of raw data (profiles, outcome and serving
summaries); a *result* is a judgement computed from summaries; a *period* is a day or a week
of windows.
"""
