"""The roof: the composition of every capability: the CLI, the daemon, the demo.

Nothing below `monitor.app` imports it; it imports every capability package
(`collectors`, `alerts`, `guards`, `dashboards`, `migrations`) and the ground of `monitor`.
"""
