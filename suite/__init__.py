"""The shared core of the benchmark suite: models, training, measurement and records.

Nothing under ``suite`` knows a domain; domains live in ``tasks``.
"""

from omegaconf import OmegaConf

from suite.runtime.names import command_dir, model_id

# ${model_id:${model.name},${oc.select:hydra.runtime.choices.model/attention,null}} in the sweep subdirs: every
# attention variant of a sweep gets its own directory.
OmegaConf.register_new_resolver("model_id", model_id, replace=True)
# ${command_dir:${hydra.overrides.task}} in conf/config.yaml's hydra.run.dir and hydra.sweep.dir: the same command runs
# in the same directory, so a killed run or sweep resumes when the command runs again.
OmegaConf.register_new_resolver("command_dir", command_dir, replace=True)
