"""docs/real-repositories.md's table of the Expert tasks is what GPT-4o's recorded runs show: each row is read
again from the published trajectories (the repository cloned, what was fetched from the Hugging Face Hub, Google
Drive or elsewhere, which packages pip built from source, whether the run met a missing GPU), and must match."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.support.helpers import REFERENCE_TRAJECTORIES

DOC = Path(__file__).resolve().parents[2] / "docs" / "real-repositories.md"
RUNS = REFERENCE_TRAJECTORIES / "react-super_expert"

_CLONE = re.compile(r"git clone (?:-\S+ )*(https://github\.com/[\w.-]+/[\w.-]+?)(?:\.git)?(?=\s|$)")
_HUB = re.compile(
    r"huggingface\.co|hf_hub_download|snapshot_download|huggingface-cli|"
    r"Downloading[^\n]{0,80}(?:config\.json|pytorch_model|\.safetensors|tokenizer|vocab\.|builder script|readme|data files)",
    re.IGNORECASE,
)
_HUB_ACTION = re.compile(r"from_pretrained\(|load_dataset\(")
_DRIVE = re.compile(r"gdown|drive\.google\.com|docs\.google\.com")
_DOWNLOAD = re.compile(r"(?:wget|curl)\b[^\n]*?(https?://[^\s'\"]+)")
# What a script the agent ran fetched, as its output shows it: wget's log of each request, and git's clones.
_WGET_LOG = re.compile(r"^--\d{4}-\d\d-\d\d \d\d:\d\d:\d\d--\s+(https?://\S+)", re.M)
_CLONED = re.compile(r"Cloning into '([^'/]+)'")
_BUILT = re.compile(r"Building wheel for ([\w.-]+) \((?:setup\.py|pyproject\.toml)\)")
_NO_GPU = re.compile(
    r"Torch not compiled with CUDA|Found no NVIDIA driver|no CUDA GPUs are available|CUDA driver|"
    r"torch\.cuda\.is_available\(\) is False|NVIDIA-SMI has failed",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Needs:
    repository: str
    hub: bool
    drive: bool
    downloads: bool  # files fetched from elsewhere (wget, curl, other repositories cloned), not the Hub or Drive
    built: tuple[str, ...]  # packages pip built from source (sdists)
    no_gpu: bool  # the run met an error for want of a GPU

    @property
    def offline(self) -> bool:
        """Nothing seen fetched but the repository and packages (in the actions, or in the output of what they
        ran): what an offline bundle would need to hold, had it been checked."""
        return not (self.hub or self.drive or self.downloads)


def needs(run: Path) -> Needs:
    """What one recorded run fetched and met, read from its notebook."""
    notebook = json.loads((run / "history.ipynb").read_text())
    actions, outputs = [], []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        actions.append("".join(cell["source"]))
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain") or ""
            outputs.append("".join(text) if isinstance(text, list) else text)
            outputs.extend(output.get("traceback", []))
    action, output = "\n".join(actions), "\n".join(outputs)
    clone = _CLONE.search(action)
    fetched = [*_DOWNLOAD.findall(action), *_WGET_LOG.findall(output)]
    downloads = [u for u in fetched if "huggingface.co" not in u and "sh.rustup.rs" not in u]
    own = clone.group(1).rsplit("/", 1)[-1] if clone else ""
    downloads += [name for name in _CLONED.findall(output) if name != own]
    return Needs(
        repository=clone.group(1) if clone else "",
        hub=bool(_HUB.search(action + output) or _HUB_ACTION.search(action)),
        drive=bool(_DRIVE.search(action + output)),
        downloads=bool(downloads),
        built=tuple(sorted({name.lower() for name in _BUILT.findall(output)})),
        no_gpu=bool(_NO_GPU.search(output)),
    )


def table_rows() -> list[str]:
    """The table's rows as docs/real-repositories.md writes them."""
    rows = []
    for run in sorted(p for p in RUNS.iterdir() if (p / "history.ipynb").is_file()):
        n = needs(run)
        mark = {True: "yes", False: ""}
        built = ", ".join(n.built) if n.built else ""
        cells = [run.name, n.repository.removeprefix("https://github.com/"), mark[n.hub], mark[n.drive]]
        cells += [mark[n.downloads], built, mark[n.no_gpu], mark[n.offline]]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def test_the_expert_tasks_table_is_what_the_recorded_runs_show() -> None:
    if not RUNS.is_dir():
        pytest.skip(f"{RUNS} is not here (set SUPER_BENCH_REFERENCE_TRAJECTORIES)")
    lines = DOC.read_text().splitlines()
    documented = [
        line for line in lines if re.match(r"\| [a-z0-9_-]+ \| ", line) and not line.startswith(("| task |", "| --- |"))
    ]
    assert documented == table_rows()


def test_the_offline_tasks_named_in_prose_are_those_of_the_table() -> None:
    if not RUNS.is_dir():
        pytest.skip(f"{RUNS} is not here (set SUPER_BENCH_REFERENCE_TRAJECTORIES)")
    offline = sorted(run.name for run in RUNS.iterdir() if (run / "history.ipynb").is_file() and needs(run).offline)
    match = re.search(r"Fetched nothing else, as far as their recordings show: (.*?)\.\n", DOC.read_text(), re.S)
    assert match is not None
    assert sorted(re.findall(r"`([\w-]+)`", match.group(1))) == offline
