"""The foundation every layer uses: named-plugin registries, progress reporting, the paused
cyclic garbage collector, secret redaction and the defaults shown in `--help`.
"""
