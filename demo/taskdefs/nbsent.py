"""nbsent: Naive Bayes sentiment classification (dependencies, configuration, goal)."""

from taskdefs._common import auto, execute, expert, expert_query, json_answer_cell, masked, setup_cells

REPO = "nbsent"
SETUP = setup_cells(REPO)
INSTALL = execute("!pip install vendor/polartok-0.3.1-py3-none-any.whl")
CONFIG = execute(
    "import json\n"
    'config = json.load(open("configs/nb_bigram.json"))\n'
    "config.update(alpha=0.5, min_count=1)\n"
    'json.dump(config, open("configs/nb_bigram_a05.json", "w"), indent=2)\n'
    "config"
)
RUN = execute("!python train.py --config configs/nb_bigram_a05.json")
REPORT = json_answer_cell(
    '{key: json.load(open("results/metrics.json"))["test_" + key] for key in ("accuracy", "macro_f1")}'
)

NBSENT = expert(
    "nbsent",
    REPO,
    expert_query(
        "Train the multinomial Naive Bayes sentiment classifier of the nbsent repository on the SST-mini data and "
        "evaluate it on the test set.",
        "the test accuracy and macro-F1",
        {"accuracy": 0.0, "macro_f1": 0.0},
        [
            "Use the settings of configs/nb_bigram.json, except for the smoothing: alpha = 0.5.",
            "Keep every n-gram feature of the training data, including those seen only once (minimum count 1).",
        ],
        REPO,
    ),
    {"accuracy": 0.81, "macro_f1": 0.81},
    [
        r"Loaded 600 train / 150 dev / 200 test sentences",
        r"Vocabulary: \d+ features",
        r"Test accuracy: 0\.\d+ \| Test macro-F1: 0\.\d+",
    ],
    [*SETUP, INSTALL, CONFIG, RUN, REPORT],
    entrypoint="train.py",
    min_runtime=0.04,
)

EXPERT = [NBSENT]
MASKED = [
    masked(
        NBSENT,
        "dependencies",
        [*SETUP, CONFIG],
        [INSTALL, RUN, REPORT],
        "install the dependencies that the training script needs, then run "
        "`python train.py --config configs/nb_bigram_a05.json` (that config holds the requested settings) and "
        "report the result.",
    ),
    masked(
        NBSENT,
        "configuration",
        [*SETUP, INSTALL],
        [CONFIG, RUN, REPORT],
        "the dependencies are installed. Set up the requested model configuration, train and evaluate with it, "
        "and report the result.",
    ),
    masked(
        NBSENT,
        "goal",
        [*SETUP, INSTALL, CONFIG],
        [RUN, REPORT],
        "the dependencies are installed and configs/nb_bigram_a05.json holds the requested settings. Find how to "
        "train and evaluate a model with it, run the experiment and report the result.",
    ),
]
AUTO = [
    auto(
        "nbsent-auto",
        REPO,
        "Train and evaluate the unigram Naive Bayes baseline of nbsent (configs/nb_unigram.json) on the SST-mini "
        "sentiment data with train.py.",
        "train.py",
        [*SETUP, INSTALL, execute("!python train.py --config configs/nb_unigram.json")],
        min_runtime=0.04,
    ),
]
