"""textrank-sum: extractive summarisation with ROUGE (dependencies, data)."""

from taskdefs._common import auto, execute, expert, expert_query, json_answer_cell, masked, setup_cells

REPO = "textrank"
SETUP = setup_cells(REPO)
INSTALL = execute("!pip install wheels/rougekit-1.0.2-py3-none-any.whl")
LIMIT = execute(
    'articles = open("data/cnndm_mini/test.jsonl").readlines()\n'
    'open("data/cnndm_mini/test_first20.jsonl", "w").writelines(articles[:20])\n'
    'print(f"kept {len(articles[:20])} of {len(articles)} articles")'
)
SUMMARIZE = execute(
    "!python summarize.py --input data/cnndm_mini/test_first20.jsonl --output outputs/textrank_k2.jsonl "
    "--num_sentences 2"
)
EVALUATE = execute(
    "!python evaluate.py --summaries outputs/textrank_k2.jsonl --references data/cnndm_mini/test.jsonl --stemmer "
    "--json_out outputs/rouge_k2.json"
)
REPORT = json_answer_cell('json.load(open("outputs/rouge_k2.json"))')

TEXTRANK = expert(
    "textrank-cnndm",
    REPO,
    expert_query(
        "Summarise news articles of the CNN/DM-mini test set with the TextRank summariser of the textrank-sum "
        "repository, taking 2 sentences per summary, and evaluate the summaries against the reference highlights.",
        "the mean ROUGE-1, ROUGE-2 and ROUGE-L F1",
        {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0},
        [
            "Use only the first 20 articles of data/cnndm_mini/test.jsonl.",
            "Use the default damping factor, and evaluate with stemming.",
        ],
        REPO,
    ),
    {"rouge1": 0.4453, "rouge2": 0.2643, "rougeL": 0.3292},
    [
        r"Loaded 20 articles",
        r"Wrote 20 textrank summaries \(2 sentences each\)",
        r"ROUGE-1 F1: 0\.\d+ \| ROUGE-2 F1: 0\.\d+ \| ROUGE-L F1: 0\.\d+",
    ],
    [*SETUP, INSTALL, LIMIT, SUMMARIZE, EVALUATE, REPORT],
    entrypoint="summarize.py",
    min_runtime=0.02,
)

EXPERT = [TEXTRANK]
MASKED = [
    masked(
        TEXTRANK,
        "dependencies",
        [*SETUP, LIMIT, SUMMARIZE],
        [INSTALL, EVALUATE, REPORT],
        "the summaries of the first 20 articles are in outputs/textrank_k2.jsonl. Install what the evaluation "
        "needs, evaluate the summaries (with stemming) and report the result.",
    ),
    masked(
        TEXTRANK,
        "data",
        [*SETUP, INSTALL],
        [LIMIT, SUMMARIZE, EVALUATE, REPORT],
        "the dependencies are installed. Summarise only the first 20 articles as asked, evaluate the summaries "
        "and report the result.",
    ),
]
AUTO = [
    auto(
        "textrank-auto",
        REPO,
        "Evaluate the Lead-3 baseline of textrank-sum on the CNN/DM-mini test set: summarise with summarize.py "
        "and score the summaries with evaluate.py.",
        "evaluate.py",
        [
            *SETUP,
            INSTALL,
            execute(
                "!python summarize.py --method lead --input data/cnndm_mini/test.jsonl --output outputs/lead3.jsonl"
            ),
            execute("!python evaluate.py --summaries outputs/lead3.jsonl --references data/cnndm_mini/test.jsonl"),
        ],
        min_runtime=0.02,
    ),
]
