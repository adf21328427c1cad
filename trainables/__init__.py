"""The registered trainables: every module here declares an `INFO` (see tune_app.registry)."""
