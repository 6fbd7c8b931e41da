"""The suite's own report sections, one module each; every module here registers its section on import
(``suite.report.section.discover``). A task's own sections live beside it, as ``tasks/<name>_report.py``."""
