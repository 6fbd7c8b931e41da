"""The suite's Hydra sweeper for ``experiment=tune`` (Hydra finds plugins in the ``hydra_plugins`` namespace)."""
