"""Clustering quality against reference classes (host-side numpy)."""

import numpy as np


def contingency(classes, clusters):
    class_ids = {c: i for i, c in enumerate(sorted(set(classes)))}
    table = np.zeros((len(class_ids), int(max(clusters)) + 1))
    for c, k in zip(classes, clusters):
        table[class_ids[c], k] += 1
    return table


def purity(classes, clusters):
    table = contingency(classes, clusters)
    return float(table.max(axis=0).sum() / table.sum())


def nmi(classes, clusters):
    """Normalised mutual information with the arithmetic mean of the entropies."""
    table = contingency(classes, clusters)
    p = table / table.sum()
    pc, pk = p.sum(axis=1), p.sum(axis=0)
    nz = p > 0
    mi = float((p[nz] * np.log(p[nz] / np.outer(pc, pk)[nz])).sum())
    h = lambda q: -float((q[q > 0] * np.log(q[q > 0])).sum())  # noqa: E731
    return mi / ((h(pc) + h(pk)) / 2)
