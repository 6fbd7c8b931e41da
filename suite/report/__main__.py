"""``python -m suite.report RUNS... --name NAME``: the report of run directories (``suite.report.build``)."""

from suite.report.build import main

raise SystemExit(main())
