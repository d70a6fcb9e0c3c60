"""Correlation between cosine similarities of word vectors and human similarity judgements."""

import argparse

import numpy as np

from ppmivec.io import load_vectors


def read_pairs(path):
    pairs = []
    with open(path, encoding="utf-8") as f:
        next(f)
        for line in f:
            w1, w2, score = line.rstrip("\n").split("\t")
            pairs.append((w1, w2, float(score)))
    return pairs


def cosine(a, b):
    return np.asscalar(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def pearson(x, y):
    x, y = np.asarray(x), np.asarray(y)
    x, y = x - x.mean(), y - y.mean()
    return float((x * y).sum() / np.sqrt((x**2).sum() * (y**2).sum()))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--vectors", required=True)
    parser.add_argument("--dataset", default="data/wordsim_mini.tsv")
    args = parser.parse_args()

    vectors = load_vectors(args.vectors)
    pairs = read_pairs(args.dataset)
    covered = [(w1, w2, s) for w1, w2, s in pairs if w1 in vectors and w2 in vectors]
    predicted = [cosine(vectors[w1], vectors[w2]) for w1, w2, _ in covered]
    gold = [s for _, _, s in covered]
    print(f"Pairs covered: {len(covered)}/{len(pairs)}")
    print(f"Pearson r: {pearson(predicted, gold):.4f}")


if __name__ == "__main__":
    main()
