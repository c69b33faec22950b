from __future__ import annotations

from monitor.app.cli.main import main

main()
