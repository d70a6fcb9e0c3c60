"""Retrieve passages for a set of queries with BM25 and write an MS MARCO run file."""

import argparse
import os
import time

from bm25kit.index import BM25Index
from bm25kit.io import read_tsv_pairs, write_run
from bm25kit.text import analyze


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--collection", required=True, help="collection.tsv: pid<TAB>text")
    parser.add_argument("--queries", required=True, help="queries.tsv: qid<TAB>text")
    parser.add_argument("--run_out", required=True)
    parser.add_argument("--k1", type=float, default=0.9)
    parser.add_argument("--b", type=float, default=0.4)
    parser.add_argument("--topk", type=int, default=100)
    parser.add_argument("--no_stem", action="store_true")
    parser.add_argument("--keep_stopwords", action="store_true")
    args = parser.parse_args()

    analyzer_options = {"use_stemmer": not args.no_stem, "remove_stopwords": not args.keep_stopwords}
    start = time.time()
    index = BM25Index(k1=args.k1, b=args.b)
    for pid, text in read_tsv_pairs(args.collection):
        index.add(pid, analyze(text, **analyzer_options))
    index.finalize()
    print(f"Indexed {len(index.doc_ids)} passages ({len(index.postings)} terms) in {time.time() - start:.2f}s")

    queries = read_tsv_pairs(args.queries)
    run = {qid: index.search(analyze(text, **analyzer_options), args.topk) for qid, text in queries}
    os.makedirs(os.path.dirname(args.run_out) or ".", exist_ok=True)
    write_run(args.run_out, run)
    print(f"Retrieved top-{args.topk} passages for {len(queries)} queries (k1={args.k1}, b={args.b})")
    print(f"Wrote run to {args.run_out}")


if __name__ == "__main__":
    main()
