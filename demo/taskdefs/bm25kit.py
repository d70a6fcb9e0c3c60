"""bm25kit: BM25 retrieval (data, custom)."""

from taskdefs._common import auto, edit, execute, expert, expert_query, json_answer_cell, masked, setup_cells

REPO = "bm25kit"
SETUP = setup_cells(REPO)
CONVERT = execute(
    """import json, os

os.makedirs("data/scifact_tsv", exist_ok=True)
with open("data/scifact_mini/corpus.jsonl") as f, open("data/scifact_tsv/collection.tsv", "w") as out:
    for line in f:
        doc = json.loads(line)
        out.write(f"{doc['_id']}\\t{doc['title']} {doc['text']}\\n")
with open("data/scifact_mini/queries.jsonl") as f, open("data/scifact_tsv/queries.tsv", "w") as out:
    for line in f:
        query = json.loads(line)
        out.write(f"{query['_id']}\\t{query['text']}\\n")
with open("data/scifact_mini/qrels/test.tsv") as f, open("data/scifact_tsv/qrels.tsv", "w") as out:
    next(f)  # header
    for line in f:
        qid, pid, score = line.split()
        out.write(f"{qid} 0 {pid} {score}\\n")
!wc -l data/scifact_tsv/*"""
)
RETRIEVE = execute(
    "!python retrieve.py --collection data/scifact_tsv/collection.tsv --queries data/scifact_tsv/queries.tsv "
    "--run_out runs/scifact.tsv"
)
CUTOFFS = edit(
    "evaluate.py",
    '    metrics = {"MRR@10": mrr_at(qrels, run, 10), "Recall@100": recall_at(qrels, run, 100)}',
    '    metrics = {"MRR@3": mrr_at(qrels, run, 3), "Recall@3": recall_at(qrels, run, 3)}',
)
EVALUATE = execute(
    "!python evaluate.py --qrels data/scifact_tsv/qrels.tsv --run runs/scifact.tsv --json_out runs/scifact.json"
)
REPORT = json_answer_cell('{k.lower(): v for k, v in json.load(open("runs/scifact.json")).items()}')

BM25 = expert(
    "bm25-scifact",
    REPO,
    expert_query(
        "Evaluate the BM25 baseline of the bm25kit repository on the SciFact-mini data that ships with it "
        "(data/scifact_mini, in the BEIR format).",
        "MRR@3 and Recall@3 over the test queries",
        {"mrr@3": 0.0, "recall@3": 0.0},
        [
            "Index each document as its title, a space, and its text.",
            "Use the default BM25 parameters and text analysis of retrieve.py, and retrieve 100 documents per query.",
        ],
        REPO,
    ),
    {"mrr@3": 0.8056, "recall@3": 0.7914},
    [r"Indexed 240 passages", r"Retrieved top-100 passages for 60 queries", r"Queries evaluated: 60"],
    [*SETUP, CONVERT, RETRIEVE, CUTOFFS, EVALUATE, REPORT],
    entrypoint="retrieve.py",
    min_runtime=0.05,
)

EXPERT = [BM25]
MASKED = [
    masked(
        BM25,
        "data",
        [*SETUP, CUTOFFS],
        [CONVERT, RETRIEVE, EVALUATE, REPORT],
        "evaluate.py has been changed to report MRR@3 and Recall@3. bm25kit reads only the MS MARCO file formats: "
        "make the SciFact-mini data usable, retrieve with retrieve.py, evaluate the run and report the result.",
    ),
    masked(
        BM25,
        "custom",
        [*SETUP, CONVERT, RETRIEVE],
        [CUTOFFS, EVALUATE, REPORT],
        "the data is converted to data/scifact_tsv/ (collection.tsv, queries.tsv, TREC qrels in qrels.tsv) and the "
        "BM25 run is in runs/scifact.tsv. evaluate.py reports MRR@10 and Recall@100; make it report the metrics "
        "asked for, evaluate the run and report the result.",
    ),
]
AUTO = [
    auto(
        "bm25kit-auto",
        REPO,
        "Retrieve passages for the MS MARCO-mini dev queries with the BM25 retriever of bm25kit (retrieve.py).",
        "retrieve.py",
        [
            *SETUP,
            execute(
                "!python retrieve.py --collection data/msmarco_mini/collection.tsv "
                "--queries data/msmarco_mini/queries.dev.tsv --run_out runs/bm25.dev.tsv"
            ),
        ],
        min_runtime=0.05,
    ),
]
