"""`construct autogen`: repositories screened with a reason for each exclusion, then Auto tasks
written by a model (the scripted mock, and an OpenAI-compatible server on loopback)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from tests.support.helpers import cli, make_repo
from tests.support.model_server import model_server

from super_bench import load_tasks
from super_bench.construct.autogen import autogen, parse_reply
from super_bench.construct.repos import exclusion, open_repository
from super_bench.models.mock import MockModel

TINYREG = "https://github.com/super-bench-demo/tinyreg"
SPKMEANS = "https://github.com/super-bench-demo/spkmeans"
SCRIPT = 'import argparse\n\nif __name__ == "__main__":\n    argparse.ArgumentParser().parse_args()\n'


@pytest.fixture
def data_server() -> Iterator[str]:
    """A file server on loopback: /data/ok.zip exists, everything else is 404."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_HEAD(self) -> None:
            self.send_response(200 if self.path == "/data/ok.zip" else 404)
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def repos(tmp_path: Path, data_server: str) -> dict[str, Path]:
    readme = "# {name}\n\nTrain the model: `python train.py --epochs 1`\n"
    made = {
        "gpu-only": {"README.md": readme, "train.py": "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n" + SCRIPT},
        "gpu-optional": {
            "README.md": readme,
            "train.py": 'import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n' + SCRIPT,
        },
        "llm-api": {"README.md": readme, "train.py": "import os\nKEY = os.environ['OPENAI_API_KEY']\n" + SCRIPT},
        "private": {"README.md": readme + "\nThe data is available upon request.\n", "train.py": SCRIPT},
        "no-readme": {"train.py": SCRIPT},
        "no-script": {"README.md": "# a library\n", "lib/util.py": "def f():\n    return 1\n"},
        "dead-link": {"README.md": readme + f"\nDownload the data: {data_server}/data/gone.zip\n", "train.py": SCRIPT},
        "live-link": {"README.md": readme + f"\nDownload the data: {data_server}/data/ok.zip\n", "train.py": SCRIPT},
    }
    root = tmp_path / "repos"
    return {
        name: make_repo(root / name, {k: v.format(name=name) for k, v in files.items()}) for name, files in made.items()
    }


def test_repositories_are_screened_with_a_reason(repos: dict[str, Path], tmp_path: Path) -> None:
    reasons = {name: exclusion(open_repository(str(path), tmp_path)) for name, path in repos.items()}
    assert reasons["gpu-only"] == "GPU-only code: train.py:2 ('.cuda('), and nothing selects the CPU"
    assert reasons["llm-api"] == "needs an external LLM API: train.py:2 ('OPENAI_API_KEY')"
    assert reasons["private"] == "private data: README.md:5 ('available upon request')"
    assert reasons["no-readme"] == "no README at the repository's root"
    assert reasons["no-script"] is not None and reasons["no-script"].startswith("no runnable Python entrypoint")
    assert reasons["dead-link"] is not None and reasons["dead-link"].endswith("/data/gone.zip (HTTP 404)")
    assert reasons["gpu-optional"] is None and reasons["live-link"] is None
    # Offline, links are not followed.
    assert exclusion(open_repository(str(repos["dead-link"]), tmp_path), check_urls=False) is None
    # The demo repositories (cloned from the bundled copies): spkmeans defaults to CUDA but can run on the CPU.
    for url in (TINYREG, SPKMEANS):
        repo = open_repository(url, tmp_path / url.rsplit("/", 1)[-1])
        assert exclusion(repo) is None and repo.url == url and repo.commit is not None


@pytest.mark.slow
def test_autogen_with_the_scripted_model(repos: dict[str, Path], tmp_path: Path) -> None:
    replies = [
        # tinyreg: a script that does not exist, corrected on the second try.
        'Here it is:\n```json\n{"query": "Train the ridge regression on HousePrice-mini for 5 epochs and report the test MSE.", "entrypoint": "python trian.py --epochs 5"}\n```',
        '{"query": "Train the ridge regression on HousePrice-mini for 5 epochs and report the test MSE.", "entrypoint": "python train.py --epochs 5", "dataset": "HousePrice-mini", "model": "ridge regression", "arguments": "--epochs 5"}',
        # tinyreg, second task: the same again, dropped as a duplicate.
        '{"query": "Train the ridge regression on HousePrice-mini for 5 epochs, then report the test MSE!", "entrypoint": "train.py"}',
        # spkmeans
        '{"query": "Cluster the NewsHeadlines-mini headlines into 4 clusters with spherical k-means on the CPU.", "entrypoint": "cluster.py", "goal": "clustering"}',
        '{"query": "Evaluate the clustering of the headlines with a different seed and report NMI.", "entrypoint": "spkmeans/kmeans.py"}',
        # gpu-optional: never a valid answer
        "I cannot help with that.",
        "Still no JSON.",
        "Nor now.",
    ]
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(replies))
    out = tmp_path / "auto.jsonl"
    args = [TINYREG, SPKMEANS, str(repos["gpu-only"]), str(repos["llm-api"]), str(repos["gpu-optional"])]
    result = cli(
        "construct", "autogen", *args, "--model", f"mock/{script}", "--out", str(out), "--per-repo", "2", "--offline"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    text = " ".join(result.stdout.split())
    assert f"excluded {repos['gpu-only']}: GPU-only code: train.py:2 ('.cuda('), and nothing selects the CPU" in text
    assert f"excluded {repos['llm-api']}: needs an external LLM API" in text
    assert f"excluded {repos['gpu-optional']}: the model gave no valid task: the reply is not a JSON object" in text
    assert f"duplicate {TINYREG}: a task like tinyreg-auto exists; dropped" in text
    assert "Added 3 Auto task(s)" in text

    tasks = {t.task_id: t for t in load_tasks(out)}
    assert set(tasks) == {"tinyreg-auto", "spkmeans-auto", "spkmeans-auto-2"}
    tinyreg = tasks["tinyreg-auto"]
    assert tinyreg.task_set == "auto" and tinyreg.entrypoint == "train.py"
    assert tinyreg.github_repo == TINYREG and tinyreg.git_commit == "2b28166bf889daadc427152435678917f4ed48af"
    assert tinyreg.query.endswith(f"\n\nGit repository: {TINYREG}\nCommit: {tinyreg.git_commit}")
    assert tinyreg.query_components == {
        "dataset": "HousePrice-mini",
        "model": "ridge regression",
        "arguments": "--epochs 5",
    }
    assert tasks["spkmeans-auto-2"].entrypoint == "spkmeans/kmeans.py"
    assert cli("tasks", "validate", str(out)).returncode == 0  # entrypoints checked in the repositories

    # Tasks already in the file are not made again.
    again = tmp_path / "again.json"
    again.write_text(json.dumps([replies[1]]))
    result = cli("construct", "autogen", TINYREG, "--model", f"mock/{again}", "--out", str(out))
    assert "a task like tinyreg-auto exists" in " ".join(result.stdout.split())
    assert len(load_tasks(out)) == 3


@pytest.mark.slow
def test_autogen_against_an_openai_compatible_server(repos: dict[str, Path], tmp_path: Path) -> None:
    bad = '{"query": "Train the model for one epoch on the sample data and report the loss.", "entrypoint": "main.py"}'
    good = '{"query": "Train the model for one epoch on the sample data and report the loss.", "entrypoint": "train.py", "arguments": "--epochs 1"}'
    out = tmp_path / "auto.jsonl"
    with model_server(bad, good) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "SUPER_BENCH_CACHE": "off"}
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "super_bench",
                "construct",
                "autogen",
                str(repos["live-link"]),
                str(repos["no-readme"]),
                "--model",
                "openai/test-model",
                "--out",
                str(out),
            ],
            capture_output=True,
            text=True,
            env={**os.environ, **env, "COLUMNS": "200"},
            timeout=300,
        )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"excluded {repos['no-readme']}: no README at the repository's root" in result.stdout
    (task,) = load_tasks(out)
    assert task.entrypoint == "train.py" and task.task_id == "live-link-auto"
    assert task.github_repo == str(repos["live-link"]) and task.metadata == {"generated_by": "openai/test-model"}
    first, second = server.requests
    assert first["model"] == "test-model"
    assert "python train.py --epochs 1" in first["messages"][1]["content"]  # the README
    assert "Runnable scripts: train.py" in first["messages"][1]["content"]
    assert "'main.py' is not a file of the repository" in second["messages"][-1]["content"]


def test_replies_that_are_not_tasks() -> None:
    files = ["README.md", "src/train.py", "src/eval.py", "scripts/run.sh", "a/util.py", "b/util.py"]
    assert (
        parse_reply('{"query": "Train it for one epoch please.", "entrypoint": "train.py"}', files).entrypoint
        == "src/train.py"
    )
    assert (
        parse_reply(
            '{"query": "Run the whole pipeline please.", "entrypoint": "bash scripts/run.sh"}', files
        ).entrypoint
        == "scripts/run.sh"
    )
    for text, message in (
        ("no json here", "not a JSON object"),
        ('{"entrypoint": "train.py"}', "query: Field required"),
        ('{"query": "Train it for one epoch please.", "entrypoint": "nope.py"}', "'nope.py' is not a file"),
        (
            '{"query": "Train it for one epoch please.", "entrypoint": "util.py"}',
            r"names several files \(a/util.py, b/util.py\)",
        ),
    ):
        with pytest.raises(ValueError, match=message):
            parse_reply(text, files)


def test_autogen_api_reports_a_repository_that_cannot_be_read(tmp_path: Path) -> None:
    report = autogen(
        [str(tmp_path / "missing"), "https://github.com/super-bench-demo/nope"], MockModel("m", replies=[])
    )
    assert [why.split(":")[0] for _, why in report.excluded] == ["cannot read the repository"] * 2
    assert report.tasks == []


def test_a_repository_that_looks_like_an_option_is_never_read_as_one(tmp_path: Path) -> None:
    from super_bench.errors import TaskSourceError

    marker = tmp_path / "ran"
    with pytest.raises(TaskSourceError, match=r"protocol '--upload-pack=touch .*' is not supported"):
        open_repository(f"--upload-pack=touch {marker}://x", tmp_path)
    assert not marker.exists()
