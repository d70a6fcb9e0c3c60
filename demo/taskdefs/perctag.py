"""perctag: averaged-perceptron NER (issue, data)."""

from taskdefs._common import auto, edit, execute, expert, expert_query, json_answer_cell, masked, setup_cells

REPO = "perctag"
SETUP = setup_cells(REPO)
LIMIT = execute(
    'sentences = open("data/conll_mini/train.txt").read().strip().split("\\n\\n")\n'
    'with open("data/conll_mini/train_first60.txt", "w") as f:\n'
    '    f.write("\\n\\n".join(sentences[:60]) + "\\n")\n'
    'print(f"kept {len(sentences[:60])} of {len(sentences)} sentences")'
)
FIX_WEIGHTS = edit(
    "tagger/perceptron.py",
    "        self.weights = np.zeros((0, len(self.tags)), dtype=np.float)",
    "        self.weights = np.zeros((0, len(self.tags)), dtype=np.float64)",
)
FIX_COUNTS = execute(
    "!sed -i 's/dtype=np.int)/dtype=np.int64)/' tagger/metrics.py\n!grep -n 'np.int' tagger/metrics.py"
)
RUN = execute("!python train.py --train data/conll_mini/train_first60.txt --epochs 3 --seed 13")
REPORT = json_answer_cell('{k: json.load(open("results/dev_metrics.json"))[k] for k in ("precision", "recall", "f1")}')

PERCTAG = expert(
    "perctag-ner",
    REPO,
    expert_query(
        "Train the averaged-perceptron NER tagger of the perctag repository on CoNLL-mini and evaluate it on the "
        "dev set.",
        "the entity-level precision, recall and F1 on the dev set",
        {"precision": 0.0, "recall": 0.0, "f1": 0.0},
        [
            "Train on the first 60 sentences of data/conll_mini/train.txt only.",
            "Train for 3 epochs with seed 13.",
        ],
        REPO,
    ),
    {"precision": 0.7279, "recall": 0.7839, "f1": 0.7549},
    [
        r"Read 60 training sentences",
        r"Epoch 3/3: train token accuracy 0\.\d+",
        r"Dev token accuracy: 0\.\d+ \| entity P=0\.\d+ R=0\.\d+ F1=0\.\d+",
    ],
    [*SETUP, LIMIT, FIX_WEIGHTS, FIX_COUNTS, RUN, REPORT],
    entrypoint="train.py",
    min_runtime=0.05,
)

EXPERT = [PERCTAG]
MASKED = [
    masked(
        PERCTAG,
        "issue",
        [*SETUP, LIMIT],
        [FIX_WEIGHTS, FIX_COUNTS, RUN, REPORT],
        "data/conll_mini/train_first60.txt holds the first 60 training sentences, but the training script fails "
        "with the installed numpy. Fix the code, then run "
        "`python train.py --train data/conll_mini/train_first60.txt --epochs 3 --seed 13` and report the result.",
    ),
    masked(
        PERCTAG,
        "data",
        [*SETUP, FIX_WEIGHTS, FIX_COUNTS],
        [LIMIT, RUN, REPORT],
        "the code runs with the installed numpy. Train on the first 60 training sentences only, as asked, "
        "then evaluate and report the result.",
    ),
]
AUTO = [
    auto(
        "perctag-auto",
        REPO,
        "Train the averaged-perceptron NER tagger of perctag on the CoNLL-mini data with train.py, for 3 epochs.",
        "train.py",
        [*SETUP, FIX_WEIGHTS, FIX_COUNTS, execute("!python train.py --epochs 3")],
        min_runtime=0.13,
    ),
]
