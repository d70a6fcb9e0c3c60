"""Evaluate an MS MARCO run file: MRR@10 and Recall@100."""

import argparse
import json

from bm25kit.io import read_qrels, read_run


def mrr_at(qrels, run, k):
    total = 0.0
    for qid, relevant in qrels.items():
        for rank, pid in enumerate(run.get(qid, [])[:k], start=1):
            if relevant.get(pid, 0) > 0:
                total += 1.0 / rank
                break
    return total / len(qrels)


def recall_at(qrels, run, k):
    total = 0.0
    for qid, relevant in qrels.items():
        positives = {pid for pid, rel in relevant.items() if rel > 0}
        retrieved = set(run.get(qid, [])[:k])
        total += len(positives & retrieved) / len(positives)
    return total / len(qrels)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--qrels", required=True)
    parser.add_argument("--run", required=True)
    parser.add_argument("--json_out", help="also write the metrics to this file")
    args = parser.parse_args()

    qrels = read_qrels(args.qrels)
    run = read_run(args.run)
    metrics = {"MRR@10": mrr_at(qrels, run, 10), "Recall@100": recall_at(qrels, run, 100)}
    print(f"Queries evaluated: {len(qrels)}")
    for name, value in metrics.items():
        print(f"{name}: {value:.4f}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({k: round(v, 4) for k, v in metrics.items()}, f, indent=2)


if __name__ == "__main__":
    main()
