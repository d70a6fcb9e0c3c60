"""Greedy left-to-right tagging with an averaged multiclass perceptron."""

import numpy as np

from tagger.features import token_features


class AveragedPerceptron:
    def __init__(self, tags):
        self.tags = list(tags)
        self.tag_index = {t: i for i, t in enumerate(self.tags)}
        self.feature_index = {}
        self.weights = np.zeros((0, len(self.tags)), dtype=np.float)
        self.totals = np.zeros_like(self.weights)
        self.steps = 0

    def _rows(self, features, grow=False):
        rows = []
        for f in features:
            row = self.feature_index.get(f)
            if row is None and grow:
                row = self.feature_index[f] = len(self.feature_index)
            if row is not None:
                rows.append(row)
        if grow and len(self.feature_index) > len(self.weights):
            extra = len(self.feature_index) - len(self.weights) + 1024
            pad = np.zeros((extra, len(self.tags)))
            self.weights = np.concatenate([self.weights, pad])
            self.totals = np.concatenate([self.totals, pad])
        return rows

    def _predict_rows(self, rows, weights):
        return self.tags[int(np.argmax(weights[rows].sum(axis=0)))] if rows else self.tags[0]

    def tag(self, tokens, weights=None):
        weights = self.weights if weights is None else weights
        tags = []
        for i in range(len(tokens)):
            prev = tags[-1] if tags else "<s>"
            prev2 = tags[-2] if len(tags) > 1 else "<s>"
            tags.append(self._predict_rows(self._rows(token_features(tokens, i, prev, prev2)), weights))
        return tags

    def train_sentence(self, tokens, gold):
        """One perceptron pass over a sentence (history from the gold tags); returns the number correct."""
        correct = 0
        for i in range(len(tokens)):
            prev = gold[i - 1] if i > 0 else "<s>"
            prev2 = gold[i - 2] if i > 1 else "<s>"
            rows = self._rows(token_features(tokens, i, prev, prev2), grow=True)
            guess = self._predict_rows(rows, self.weights)
            self.steps += 1
            if guess == gold[i]:
                correct += 1
                continue
            g, p = self.tag_index[gold[i]], self.tag_index[guess]
            # totals collects step * update, so that the average is weights - totals / steps.
            self.weights[rows, g] += 1.0
            self.weights[rows, p] -= 1.0
            self.totals[rows, g] += self.steps
            self.totals[rows, p] -= self.steps
        return correct

    def averaged_weights(self):
        return self.weights - self.totals / max(self.steps, 1)

    def save(self, path):
        features = np.array(sorted(self.feature_index, key=self.feature_index.get))
        weights = self.averaged_weights()[: len(features)]
        np.savez(path, tags=np.array(self.tags), features=features, weights=weights)

    @classmethod
    def load(cls, path):
        data = np.load(path)
        model = cls(data["tags"].tolist())
        model.feature_index = {f: i for i, f in enumerate(data["features"].tolist())}
        model.weights = data["weights"]
        return model
