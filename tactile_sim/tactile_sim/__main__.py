"""``python -m tactile_sim`` — the same command line as ``tactile-sim``."""

from .cli import main

raise SystemExit(main())
