"""Tag whitespace-tokenised sentences (one per line) with a trained model."""

import argparse

from tagger.perceptron import AveragedPerceptron


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="models/perctag.npz")
    parser.add_argument("--input", required=True)
    args = parser.parse_args()
    model = AveragedPerceptron.load(args.model)
    with open(args.input, encoding="utf-8") as f:
        for line in f:
            tokens = line.split()
            if tokens:
                print(" ".join(f"{w}/{t}" for w, t in zip(tokens, model.tag(tokens))))


if __name__ == "__main__":
    main()
