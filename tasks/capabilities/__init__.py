"""The capability map's diagnostic tasks (``base`` is the task contract around a generator; one module a family)."""
