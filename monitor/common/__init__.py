"""The foundation every layer uses: named-plugin registries, progress reporting, the paused
cyclic garbage collector, secret redaction, spawned children's logs relayed to their parent
(`childlog`), the defaults shown in `--help`, the columns data
files are read into without pandas (`columns`), lazily loaded package surfaces (`lazy`) and
the bounded cache per-model state is kept in (`cache`).
"""
