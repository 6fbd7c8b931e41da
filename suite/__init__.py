"""The shared core of the benchmark suite: models, training, measurement and records.

Nothing under ``suite`` knows a domain; domains live in ``tasks``.
"""

from omegaconf import OmegaConf


def model_id(name: str, attention: str | None = None) -> str:
    """A model's name in a sweep's directory names: 'transformer', 'transformer-local', 'lstm' (full attention, the
    default, is not named)."""
    return name if attention in (None, "full") else f"{name}-{attention}"


# ${model_id:${model.name},${oc.select:hydra.runtime.choices.model/attention,null}} in the experiments' sweep subdirs:
# every attention variant of a sweep gets its own directory.
OmegaConf.register_new_resolver("model_id", model_id, replace=True)
