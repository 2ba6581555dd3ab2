"""Experiment tracking: what a run tells a tracker (the settings and the mapping of a run
directory to params, metrics and tags), the wall-time limit of every tracking step, and the MLflow
store. Reads the run's own files, never the live run."""
