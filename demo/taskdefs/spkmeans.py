"""spkmeans: spherical k-means clustering on a GPU (cpu, configuration)."""

from taskdefs._common import auto, execute, expert, expert_query, json_answer_cell, masked, setup_cells

REPO = "spkmeans"
SETUP = setup_cells(REPO)
CONFIG = execute(
    "import json\n"
    'config = json.load(open("configs/default.json"))\n'
    "config.update(n_init=5, max_iter=20)\n"
    'json.dump(config, open("configs/task.json", "w"), indent=2)\n'
    "config"
)
# The code hands CuPy arrays back to the host with xp.asnumpy, which numpy does not have.
TO_CPU = execute("!sed -i 's/xp\\.asnumpy(/xp.asarray(/' spkmeans/kmeans.py cluster.py\n!grep -n 'xp.asarray' -r .")
RUN = execute("!python cluster.py --config configs/task.json --device cpu --seed 3")
REPORT = json_answer_cell('json.load(open("results/scores.json"))')

SPKMEANS = expert(
    "spkmeans-news",
    REPO,
    expert_query(
        "Cluster the NewsHeadlines-mini headlines with the spherical k-means of the spkmeans repository and "
        "evaluate the clustering against the categories.",
        "the NMI and purity of the best clustering",
        {"nmi": 0.0, "purity": 0.0},
        [
            "Use 4 clusters, 5 restarts and at most 20 iterations per restart; keep the TF-IDF settings of "
            "configs/default.json.",
            "Use seed 3.",
        ],
        REPO,
    ),
    {"nmi": 0.778, "purity": 0.8944},
    [
        r"Loaded 360 headlines; TF-IDF vocabulary of \d+ terms",
        r"restart 5/5: objective \d+\.\d+",
        r"Best objective \d+\.\d+ \| NMI 0\.\d+ \| purity 0\.\d+",
    ],
    [*SETUP, CONFIG, TO_CPU, RUN, REPORT],
    entrypoint="cluster.py",
    min_runtime=0.05,
)

EXPERT = [SPKMEANS]
MASKED = [
    masked(
        SPKMEANS,
        "cpu",
        [*SETUP, CONFIG],
        [TO_CPU, RUN, REPORT],
        "configs/task.json holds the requested settings. cluster.py was written for a GPU and this machine has "
        "none: make it run on the CPU, run it with that config and seed 3, and report the result.",
    ),
    masked(
        SPKMEANS,
        "configuration",
        [*SETUP, TO_CPU],
        [CONFIG, RUN, REPORT],
        "the code has been adapted to run on the CPU (pass `--device cpu`). Set the requested clustering "
        "settings, run the clustering and report the result.",
    ),
    masked(
        SPKMEANS,
        "cpu,configuration",
        SETUP,
        [CONFIG, TO_CPU, RUN, REPORT],
        "set the requested clustering settings and make cluster.py, which was written for a GPU, run on this "
        "machine, which has none. Then run the clustering and report the result.",
    ),
]
AUTO = [
    auto(
        "spkmeans-auto",
        REPO,
        "Cluster the NewsHeadlines-mini headlines with the spherical k-means of spkmeans (cluster.py) and its "
        "default configuration.",
        "cluster.py",
        [*SETUP, TO_CPU, execute("!python cluster.py --device cpu")],
        min_runtime=0.05,
    ),
]
