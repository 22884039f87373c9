"""``python -m tilesim`` is the ``tilesim`` command."""

from tilesim.cli import main

raise SystemExit(main())
