"""Mean ROUGE F1 of extracted summaries against reference highlights."""

import argparse
import json

from rougekit import RougeScorer


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--summaries", required=True)
    parser.add_argument("--references", required=True)
    parser.add_argument("--stemmer", action="store_true", help="strip suffixes before matching")
    parser.add_argument("--json_out")
    args = parser.parse_args()

    references = {r["id"]: r["highlights"] for r in read_jsonl(args.references)}
    summaries = read_jsonl(args.summaries)
    scorer = RougeScorer(("rouge1", "rouge2", "rougeL"), use_stemmer=args.stemmer)
    totals = {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0}
    for item in summaries:
        scores = scorer.score(references[item["id"]], item["summary"])
        for name in totals:
            totals[name] += scores[name].fmeasure
    means = {name: round(total / len(summaries), 4) for name, total in totals.items()}
    print(f"Evaluated {len(summaries)} summaries")
    print(f"ROUGE-1 F1: {means['rouge1']:.4f} | ROUGE-2 F1: {means['rouge2']:.4f} | ROUGE-L F1: {means['rougeL']:.4f}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(means, f, indent=2)


if __name__ == "__main__":
    main()
