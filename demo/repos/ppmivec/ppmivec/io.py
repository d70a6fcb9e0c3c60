"""word2vec text format."""

import numpy as np


def save_vectors(path, vocab, vectors):
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{len(vocab)} {vectors.shape[1]}\n")
        for word, i in sorted(vocab.items(), key=lambda item: item[1]):
            f.write(word + " " + " ".join(f"{v:.6f}" for v in vectors[i]) + "\n")


def load_vectors(path):
    vectors = {}
    with open(path, encoding="utf-8") as f:
        next(f)
        for line in f:
            word, *values = line.rstrip().split(" ")
            vectors[word] = np.array(values, dtype=float)
    return vectors
