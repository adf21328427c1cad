"""A module whose import raises, as a broken install's does (copied as a package's __init__.py, or
as a user's trainable module)."""

raise RuntimeError("broken install")


def train(config):  # never reached: the import fails first
    pass
