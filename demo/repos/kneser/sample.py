"""Sample paragraphs from a trained model."""

import argparse
import pickle

import numpy as np

from kneser.vocab import BOS, EOS


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--max_len", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    with open(args.model, "rb") as f:
        model = pickle.load(f)["model"]
    rng = np.random.RandomState(args.seed)
    words = sorted(model.vocab.words)
    for _ in range(args.n):
        context = [BOS] * (model.order - 1)
        out = []
        for _ in range(args.max_len):
            probs = np.array([model.prob(context, w) for w in words])
            word = words[rng.choice(len(words), p=probs / probs.sum())]
            if word == EOS:
                break
            out.append(word)
            context = context[1:] + [word] if model.order > 1 else context
        print(" ".join(out))


if __name__ == "__main__":
    main()
