"""ppmivec: PPMI-SVD word vectors (issue, custom)."""

from taskdefs._common import auto, edit, execute, expert, expert_query, masked, setup_cells

REPO = "ppmivec"
SETUP = setup_cells(REPO)
BUILD = execute("!python build_vectors.py --window 3 --dim 30 --out vectors/w3_d30.txt")
FIX_COSINE = edit(
    "evaluate.py",
    "    return np.asscalar(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))",
    "    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))",
)
RANKS = edit(
    "evaluate.py",
    "def main():",
    """def ranks(values):
    values = np.asarray(values)
    result = np.empty(len(values))
    result[values.argsort(kind="stable")] = np.arange(1, len(values) + 1)
    for value in np.unique(values):
        result[values == value] = result[values == value].mean()  # ties share their average rank
    return result


def main():""",
)
SPEARMAN = edit(
    "evaluate.py",
    '    print(f"Pearson r: {pearson(predicted, gold):.4f}")',
    '    print(f"Pearson r: {pearson(predicted, gold):.4f}")\n'
    '    print(f"Spearman rho: {pearson(ranks(predicted), ranks(gold)):.4f}")',
)
EVALUATE = execute(
    "output = !python evaluate.py --vectors vectors/w3_d30.txt --dataset data/wordsim_mini.tsv\nprint(output.n)"
)
REPORT = execute(
    "import json, re\n"
    'scores = dict(re.findall(r"(Pearson r|Spearman rho): (-?[\\d.]+)", output.n))\n'
    'print(json.dumps({"spearman": float(scores["Spearman rho"]), "pearson": float(scores["Pearson r"])}))'
)

PPMIVEC = expert(
    "ppmivec-wordsim",
    REPO,
    expert_query(
        "Build count-based word vectors (PPMI and SVD) with the ppmivec repository from its corpus and evaluate "
        "them on WordSim-mini.",
        "Spearman's rank correlation and Pearson's correlation between the cosine similarities and the human scores",
        {"spearman": 0.0, "pearson": 0.0},
        [
            "Use a context window of 3 and 30 dimensions; keep the other defaults of build_vectors.py.",
            "Compute Spearman's rho as the Pearson correlation of the ranks, giving tied values their average rank.",
        ],
        REPO,
    ),
    {"spearman": 0.7409, "pearson": 0.9162},
    [r"Saved \d+ vectors of dimension 30", r"Pairs covered: 64/67", r"Spearman rho: 0\.\d+"],
    [*SETUP, BUILD, FIX_COSINE, RANKS, SPEARMAN, EVALUATE, REPORT],
    entrypoint="build_vectors.py",
    min_runtime=0.05,
)

EXPERT = [PPMIVEC]
MASKED = [
    masked(
        PPMIVEC,
        "issue",
        [*SETUP, BUILD, RANKS, SPEARMAN],
        [FIX_COSINE, EVALUATE, REPORT],
        "the vectors are in vectors/w3_d30.txt and evaluate.py has been extended to print Spearman's rho, but it "
        "fails with the installed numpy. Fix it, evaluate the vectors on data/wordsim_mini.tsv and report the "
        "result.",
    ),
    masked(
        PPMIVEC,
        "custom",
        [*SETUP, BUILD, FIX_COSINE],
        [RANKS, SPEARMAN, EVALUATE, REPORT],
        "the vectors are in vectors/w3_d30.txt and evaluate.py runs, but it only reports Pearson's r. Add "
        "Spearman's rho as asked, evaluate the vectors on data/wordsim_mini.tsv and report both correlations.",
    ),
]
AUTO = [
    auto(
        "ppmivec-auto",
        REPO,
        "Build PPMI-SVD word vectors from the corpus of ppmivec with build_vectors.py.",
        "build_vectors.py",
        [*SETUP, execute("!python build_vectors.py")],
        min_runtime=0.05,
    ),
    auto(
        "ppmivec-eval-auto",
        REPO,
        "Evaluate ppmivec's PPMI-SVD word vectors on the WordSim-mini similarity data with evaluate.py.",
        "evaluate.py",
        [
            *SETUP,
            execute("!python build_vectors.py"),
            FIX_COSINE,
            execute("!python evaluate.py --vectors vectors/ppmi_svd.txt --dataset data/wordsim_mini.tsv"),
        ],
        min_runtime=0.04,
    ),
]
