"""Interpolated Kneser-Ney smoothing (Chen and Goodman, 1998) with one absolute discount."""

import math
from collections import Counter, defaultdict

from kneser.vocab import BOS, EOS


class KneserNeyLM:
    def __init__(self, order=3, discount=0.75):
        self.order = order
        self.discount = discount

    def fit(self, sentences, vocab):
        self.vocab = vocab
        n = self.order
        # counts[k][context][word]: raw counts for the highest order, continuation counts below it.
        self.counts = [defaultdict(Counter) for _ in range(n)]
        highest = self.counts[n - 1]
        for sentence in sentences:
            tokens = [BOS] * (n - 1) + vocab.map(sentence) + [EOS]
            for i in range(n - 1, len(tokens)):
                highest[tuple(tokens[i - n + 1 : i])][tokens[i]] += 1
        for k in range(n - 1, 0, -1):
            for context, words in self.counts[k].items():
                for word in words:
                    self.counts[k - 1][context[1:]][word] += 1  # one more distinct left context
        self.totals = [{c: sum(w.values()) for c, w in level.items()} for level in self.counts]
        return self

    def n_grams(self):
        return [sum(len(words) for words in level.values()) for level in self.counts]

    def prob(self, context, word):
        p = 1.0 / len(self.vocab)
        for k in range(self.order):
            ctx = tuple(context[len(context) - k :]) if k else ()
            words = self.counts[k].get(ctx)
            if not words:
                continue
            total = self.totals[k][ctx]
            backoff_mass = self.discount * len(words) / total
            p = max(words.get(word, 0) - self.discount, 0) / total + backoff_mass * p
        return p

    def sentence_logprob(self, sentence):
        n = self.order
        tokens = [BOS] * (n - 1) + self.vocab.map(sentence) + [EOS]
        return sum(math.log(self.prob(tokens[i - n + 1 : i], tokens[i])) for i in range(n - 1, len(tokens)))

    def perplexity(self, sentences):
        log_prob = sum(self.sentence_logprob(s) for s in sentences)
        n_tokens = sum(len(s) + 1 for s in sentences)
        return math.exp(-log_prob / n_tokens)
