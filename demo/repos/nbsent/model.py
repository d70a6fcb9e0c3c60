"""Multinomial Naive Bayes with additive smoothing."""

import numpy as np


class MultinomialNB:
    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, x, y):
        self.classes = np.unique(y)
        counts = np.stack([x[y == c].sum(axis=0) for c in self.classes]) + self.alpha
        self.log_likelihood = np.log(counts / counts.sum(axis=1, keepdims=True))
        self.log_prior = np.log(np.array([np.mean(y == c) for c in self.classes]))
        return self

    def predict(self, x):
        scores = x @ self.log_likelihood.T + self.log_prior
        return self.classes[np.argmax(scores, axis=1)]


def accuracy(gold, pred):
    return float(np.mean(gold == pred))


def macro_f1(gold, pred):
    scores = []
    for c in np.unique(gold):
        tp = np.sum((pred == c) & (gold == c))
        precision = tp / max(np.sum(pred == c), 1)
        recall = tp / max(np.sum(gold == c), 1)
        scores.append(0.0 if tp == 0 else 2 * precision * recall / (precision + recall))
    return float(np.mean(scores))
