"""An equal tuning budget for every model (``experiment=tune``): search spaces, the stored Optuna study, the trials'
pruning reports and the study's driver. The Hydra sweeper that runs it is ``hydra_plugins/suite_tune``."""
