"""Readers and writers for the MS MARCO file formats."""

from collections import defaultdict


def read_tsv_pairs(path):
    """`id<TAB>text` lines (collection.tsv, queries.tsv) -> list of (id, text)."""
    pairs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            ident, text = line.rstrip("\n").split("\t", 1)
            pairs.append((ident, text))
    return pairs


def read_qrels(path):
    """TREC qrels (`qid 0 pid relevance`) -> {qid: {pid: relevance}}."""
    qrels = defaultdict(dict)
    with open(path, encoding="utf-8") as f:
        for line in f:
            qid, _, pid, rel = line.split()
            qrels[qid][pid] = int(rel)
    return dict(qrels)


def write_run(path, run):
    with open(path, "w", encoding="utf-8") as f:
        for qid, ranking in run.items():
            for rank, (pid, _) in enumerate(ranking, start=1):
                f.write(f"{qid}\t{pid}\t{rank}\n")


def read_run(path):
    run = defaultdict(list)
    with open(path, encoding="utf-8") as f:
        for line in f:
            qid, pid, rank = line.split()
            run[qid].append((int(rank), pid))
    return {qid: [pid for _, pid in sorted(ranking)] for qid, ranking in run.items()}
