"""TextRank (Mihalcea and Tarau, 2004): PageRank over a sentence similarity graph."""

import math
import re

import numpy as np

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an the of in on at to for and or but is was were are be been by with as from that it its".split())


def _words(sentence):
    return {w for w in _WORD.findall(sentence.lower()) if w not in _STOP}


def similarity_matrix(sentences):
    words = [_words(s) for s in sentences]
    n = len(sentences)
    sim = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            overlap = len(words[i] & words[j])
            if overlap and len(words[i]) > 1 and len(words[j]) > 1:
                sim[i, j] = sim[j, i] = overlap / (math.log(len(words[i])) + math.log(len(words[j])))
    return sim


def pagerank(sim, damping=0.85, max_iter=100, tol=1e-6):
    n = len(sim)
    out = sim.sum(axis=1, keepdims=True)
    transition = np.divide(sim, out, out=np.full_like(sim, 1.0 / n), where=out > 0)
    scores = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        new = (1 - damping) / n + damping * transition.T @ scores
        if np.abs(new - scores).sum() < tol:
            return new
        scores = new
    return scores


def textrank(sentences, k, damping=0.85, max_iter=100):
    if len(sentences) <= k:
        return list(sentences)
    scores = pagerank(similarity_matrix(sentences), damping, max_iter)
    chosen = sorted(np.argsort(-scores, kind="stable")[:k])
    return [sentences[i] for i in chosen]
