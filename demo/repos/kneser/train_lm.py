"""Train an interpolated Kneser-Ney language model from a config file and report validation perplexity."""

import argparse
import configparser
import os
import pickle

from kneser import KneserNeyLM, Vocabulary, read_sentences


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", required=True, help="INI file with [data], [model] and [output] sections")
    args = parser.parse_args()

    config = configparser.ConfigParser(inline_comment_prefixes=(";", "#"))
    if not config.read(args.config):
        raise SystemExit(f"cannot read config file {args.config}")
    order = config.getint("model", "order")
    discount = config.getfloat("model", "discount")
    min_count = config.getint("model", "min_count")

    train = read_sentences(config.get("data", "train"))
    valid = read_sentences(config.get("data", "valid"))
    vocab = Vocabulary(train, min_count=min_count)
    print(f"Training data: {len(train)} paragraphs, {sum(map(len, train))} tokens; vocabulary {len(vocab)} words")

    model = KneserNeyLM(order=order, discount=discount).fit(train, vocab)
    for k, count in enumerate(model.n_grams(), start=1):
        print(f"{k}-grams: {count}")
    print(f"Order {order}, discount {discount}: validation perplexity {model.perplexity(valid):.2f}")

    path = config.get("output", "model_path")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump({"order": order, "discount": discount, "vocab": vocab, "counts": model.n_grams(), "model": model}, f)
    print(f"Saved model to {path}")


if __name__ == "__main__":
    main()
