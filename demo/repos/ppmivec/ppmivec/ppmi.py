"""PPMI with context distribution smoothing (Levy et al., 2015) and a truncated SVD."""

import numpy as np


def ppmi(counts, cds=0.75):
    total = counts.sum()
    word_p = counts.sum(axis=1) / total
    context = counts.sum(axis=0) ** cds
    context_p = context / context.sum()
    with np.errstate(divide="ignore"):
        pmi = np.log(counts / total) - np.log(word_p)[:, None] - np.log(context_p)[None, :]
    return np.maximum(pmi, 0)


def svd_vectors(matrix, dim, eig=0.5):
    u, s, _ = np.linalg.svd(matrix, full_matrices=False)
    return u[:, :dim] * s[:dim] ** eig
