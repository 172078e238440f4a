"""``python -m episodic``: the ``episodic`` command, for where its script is not on the path."""

from episodic.entrypoints.cli.main import main

raise SystemExit(main())
