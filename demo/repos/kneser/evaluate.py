"""Perplexity and OOV rate of a trained model on a tokenised text file."""

import argparse
import json
import pickle

from kneser import read_sentences


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--json_out")
    args = parser.parse_args()

    with open(args.model, "rb") as f:
        saved = pickle.load(f)
    model = saved["model"]
    sentences = read_sentences(args.data)
    tokens = [w for s in sentences for w in s]
    oov = sum(w not in model.vocab.words for w in tokens) / len(tokens)
    ppl = model.perplexity(sentences)
    print(f"Evaluated {len(tokens)} tokens from {args.data} with a {saved['order']}-gram model")
    print(f"Perplexity: {ppl:.2f} | OOV rate: {oov:.4f}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"perplexity": round(ppl, 2), "oov_rate": round(oov, 4)}, f)


if __name__ == "__main__":
    main()
