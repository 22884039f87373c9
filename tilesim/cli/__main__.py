"""``python -m tilesim.cli``."""

from tilesim.cli import main

raise SystemExit(main())
