"""Extractive summaries with TextRank or the Lead-k baseline."""

import argparse
import json
import os

from textrank.graph import textrank
from textrank.sentences import split_sentences


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--input", required=True, help="JSON lines with id and article")
    parser.add_argument("--output", required=True)
    parser.add_argument("--method", choices=["textrank", "lead"], default="textrank")
    parser.add_argument("--num_sentences", type=int, default=3)
    parser.add_argument("--damping", type=float, default=0.85)
    parser.add_argument("--max_iter", type=int, default=100)
    args = parser.parse_args()

    with open(args.input, encoding="utf-8") as f:
        articles = [json.loads(line) for line in f if line.strip()]
    print(f"Loaded {len(articles)} articles from {args.input}")

    os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as out:
        for article in articles:
            sentences = split_sentences(article["article"])
            if args.method == "lead":
                summary = sentences[: args.num_sentences]
            else:
                summary = textrank(sentences, args.num_sentences, args.damping, args.max_iter)
            out.write(json.dumps({"id": article["id"], "summary": " ".join(summary)}) + "\n")
    print(f"Wrote {len(articles)} {args.method} summaries ({args.num_sentences} sentences each) to {args.output}")


if __name__ == "__main__":
    main()
