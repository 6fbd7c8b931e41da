"""The shared core of the benchmark suite: models, training, measurement and records.

Nothing under ``suite`` knows a domain; domains live in ``tasks``.
"""

import os

# torch's C++ log (c10's, not Python's warnings), read once as torch loads: at its default level a run's output gets
# the CPU allocator's "Memory block of unknown size was allocated before the profiling started" from every process
# that measures peak memory (suite.measure.memory replays the allocations made during the call, as meant). Errors
# still show; a level the user set is kept.
os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")

from omegaconf import OmegaConf  # noqa: E402

from suite.runtime.names import command_dir, model_id  # noqa: E402

# ${model_id:${model.name},${oc.select:hydra.runtime.choices.model/attention,null}} in the sweep subdirs: every
# attention variant of a sweep gets its own directory.
OmegaConf.register_new_resolver("model_id", model_id, replace=True)
# ${command_dir:${hydra.overrides.task}} in conf/config.yaml's hydra.run.dir and hydra.sweep.dir: the same command runs
# in the same directory, so a killed run or sweep resumes when the command runs again.
OmegaConf.register_new_resolver("command_dir", command_dir, replace=True)
# ${times:${model.d_model},4}: a setting that scales with another (the Transformer's MLP at 4 x its width where the
# capability map matches parameters across widths).
OmegaConf.register_new_resolver("times", lambda a, b: int(a) * int(b), replace=True)
