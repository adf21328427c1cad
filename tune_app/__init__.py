"""tune_app: hyperparameter searches on Ray Tune and RLlib from one YAML spec file."""

__version__ = "0.1.0"
