"""kneser: Kneser-Ney n-gram language models (configuration, goal)."""

from taskdefs._common import auto, execute, expert, expert_query, json_answer_cell, masked, setup_cells

REPO = "kneser"
SETUP = setup_cells(REPO)
CONFIG = execute(
    """import configparser

config = configparser.ConfigParser(inline_comment_prefixes=(";", "#"))
config.read("configs/kn3.ini")
config["model"].update(order="4", discount="0.9", min_count="1")
config["output"]["model_path"] = "checkpoints/kn4.pkl"
with open("configs/kn4.ini", "w") as f:
    config.write(f)
print(open("configs/kn4.ini").read())"""
)
TRAIN = execute("!python train_lm.py --config configs/kn4.ini")
EVALUATE = execute(
    "!python evaluate.py --model checkpoints/kn4.pkl --data data/wikitext_mini/test.txt "
    "--json_out checkpoints/test.json"
)
REPORT = json_answer_cell('json.load(open("checkpoints/test.json"))')

KNESER = expert(
    "kneser-wikitext",
    REPO,
    expert_query(
        "Train an interpolated Kneser-Ney 4-gram language model with the kneser repository on WikiText-mini and "
        "evaluate it on the test split.",
        "the test perplexity and OOV rate",
        {"perplexity": 0.0, "oov_rate": 0.0},
        [
            "Use an absolute discount of 0.9.",
            "Keep every word of the training data in the vocabulary (minimum count 1).",
            "Leave the other settings as in configs/kn3.ini.",
        ],
        REPO,
    ),
    {"perplexity": 4.25, "oov_rate": 0.007},
    [
        r"4-grams: \d+",
        r"Order 4, discount 0\.9: validation perplexity \d+\.\d+",
        r"Perplexity: \d+\.\d+ \| OOV rate: 0\.\d+",
    ],
    [*SETUP, CONFIG, TRAIN, EVALUATE, REPORT],
    entrypoint="train_lm.py",
    min_runtime=0.04,
)

EXPERT = [KNESER]
MASKED = [
    masked(
        KNESER,
        "configuration",
        SETUP,
        [CONFIG, TRAIN, EVALUATE, REPORT],
        "set up the requested model configuration, train the model, evaluate it on the test split and report "
        "the result.",
    ),
    masked(
        KNESER,
        "goal",
        [*SETUP, CONFIG],
        [TRAIN, EVALUATE, REPORT],
        "configs/kn4.ini holds the requested settings. Train the model with it, measure its test perplexity and "
        "OOV rate, and report them.",
    ),
]
AUTO = [
    auto(
        "kneser-auto",
        REPO,
        "Train the trigram Kneser-Ney language model of kneser on WikiText-mini with train_lm.py and configs/kn3.ini.",
        "train_lm.py",
        [*SETUP, execute("!python train_lm.py --config configs/kn3.ini")],
        min_runtime=0.04,
    ),
    auto(
        "kneser-eval-auto",
        REPO,
        "Evaluate a bigram Kneser-Ney language model (configs/kn2.ini) on the WikiText-mini test split with the "
        "evaluate.py script of kneser.",
        "evaluate.py",
        [
            *SETUP,
            execute("!python train_lm.py --config configs/kn2.ini"),
            execute("!python evaluate.py --model checkpoints/kn2.pkl --data data/wikitext_mini/test.txt"),
        ],
        min_runtime=0.02,
    ),
]
