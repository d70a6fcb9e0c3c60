"""Train the averaged-perceptron NER tagger and evaluate it on the dev set."""

import argparse
import json
import os

import numpy as np

from tagger.conll import read_conll
from tagger.metrics import evaluate
from tagger.perceptron import AveragedPerceptron


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--train", default="data/conll_mini/train.txt")
    parser.add_argument("--dev", default="data/conll_mini/dev.txt")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--model_out", default="models/perctag.npz")
    args = parser.parse_args()

    train = read_conll(args.train)
    dev = read_conll(args.dev)
    print(f"Read {len(train)} training sentences from {args.train}")
    print(f"Read {len(dev)} dev sentences from {args.dev}")

    tags = sorted({t for _, sentence_tags in train for t in sentence_tags})
    model = AveragedPerceptron(tags)
    rng = np.random.RandomState(args.seed)
    n_tokens = sum(len(tokens) for tokens, _ in train)
    for epoch in range(1, args.epochs + 1):
        correct = 0
        for index in rng.permutation(len(train)):
            tokens, gold = train[index]
            correct += model.train_sentence(tokens, gold)
        print(f"Epoch {epoch}/{args.epochs}: train token accuracy {correct / n_tokens:.4f}")

    os.makedirs(os.path.dirname(args.model_out) or ".", exist_ok=True)
    model.save(args.model_out)
    averaged = model.averaged_weights()
    predictions = [model.tag(tokens, averaged) for tokens, _ in dev]
    scores = evaluate([gold for _, gold in dev], predictions)
    print(
        f"Dev token accuracy: {scores['accuracy']:.4f} | entity P={scores['precision']:.4f} "
        f"R={scores['recall']:.4f} F1={scores['f1']:.4f}"
    )
    os.makedirs("results", exist_ok=True)
    with open("results/dev_metrics.json", "w") as f:
        json.dump({k: round(v, 4) for k, v in scores.items()}, f, indent=2)


if __name__ == "__main__":
    main()
