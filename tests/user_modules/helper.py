"""A helper module beside nodes.py: it must reach the workers too."""


def scale(x, step):
    return x * step
