"""The pure ALMITA pipeline: every algorithmic stage as plain functions on networkx graphs.

Nothing in this package may import Django (``tests/pipeline/test_purity.py`` enforces it), so the
algorithms can run in a worker, a notebook or a CLI without a configured project.
"""
