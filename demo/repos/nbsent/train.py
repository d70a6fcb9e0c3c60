"""Train and evaluate a Naive Bayes sentiment classifier on SST-mini."""

import argparse
import json
import os

import numpy as np

from features import NgramVectorizer
from model import MultinomialNB, accuracy, macro_f1


def read_split(path):
    labels, sentences = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            label, sentence = line.rstrip("\n").split("\t", 1)
            labels.append(label)
            sentences.append(sentence)
    return np.array(labels), sentences


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", required=True, help="JSON file with the model settings (see README)")
    parser.add_argument("--data_dir", default="data/sst_mini")
    parser.add_argument("--output_dir", default="results")
    args = parser.parse_args()

    with open(args.config) as f:
        config = json.load(f)
    print(f"Config: {json.dumps(config, sort_keys=True)}")

    splits = {name: read_split(os.path.join(args.data_dir, f"{name}.tsv")) for name in ("train", "dev", "test")}
    print("Loaded " + " / ".join(f"{len(splits[n][0])} {n}" for n in splits) + " sentences")

    vectorizer = NgramVectorizer(
        ngram_max=config["ngram_max"],
        min_count=config["min_count"],
        binary=config["binary"],
        negation=config["negation"],
        lowercase=config.get("lowercase", True),
    )
    y_train, train_sentences = splits["train"]
    x_train = vectorizer.fit(train_sentences).transform(train_sentences)
    print(f"Vocabulary: {len(vectorizer.vocab)} features")

    model = MultinomialNB(alpha=config["alpha"]).fit(x_train, y_train)
    metrics = {}
    for name in ("dev", "test"):
        y, sentences = splits[name]
        pred = model.predict(vectorizer.transform(sentences))
        metrics[f"{name}_accuracy"] = round(accuracy(y, pred), 4)
        metrics[f"{name}_macro_f1"] = round(macro_f1(y, pred), 4)
    print(f"Dev accuracy: {metrics['dev_accuracy']:.4f}")
    print(f"Test accuracy: {metrics['test_accuracy']:.4f} | Test macro-F1: {metrics['test_macro_f1']:.4f}")

    os.makedirs(args.output_dir, exist_ok=True)
    with open(os.path.join(args.output_dir, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=2)


if __name__ == "__main__":
    main()
