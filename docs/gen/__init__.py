"""The parts of the docs made from the code, one module per generated page (see generate.py)."""
