"""What a task may fetch without the internet: git mirrors, the PyPI upload cutoff, offline bundles, and
the typed settings that name them."""
