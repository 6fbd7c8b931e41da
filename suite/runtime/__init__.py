"""The run's record and what every run relies on: failures, files, devices, numerics, tracking, config composition."""
