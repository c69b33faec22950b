from __future__ import annotations

from monitor.cli.main import main

main()
