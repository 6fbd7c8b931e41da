"""The training loop: the Trainer, its state, callbacks, checkpoints, optimizers and schedules."""
