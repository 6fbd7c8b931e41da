"""The jobs a run can do, one module each, named as its config ``conf/job/<name>.yaml`` (``ls conf/job``: the list is
not repeated here, so it cannot go stale).

A job is a callable instantiated partially from ``cfg.job`` (``conf/job/<name>.yaml``):
``job(cfg=, device=, run_dir=, tracker=) -> dict`` of record fields. Each starts from the one
preparation step (``suite.jobs.prepare``: the task, its data, the model on the device); a job
that cannot finish raises, and a ``suite.runtime.failures.RunFailure`` carries the status its record
gets. ``suite.run`` composes, seeds, calls the job and records.
"""
