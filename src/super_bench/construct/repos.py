"""Screening repositories for Auto tasks: is there something a CPU-only agent can run?

A repository is kept when it has a README; a runnable Python entrypoint (a script with a
``__main__`` block or a command-line parser, or one its README runs); no GPU-only code (CUDA
calls, CuPy and the like with nothing that selects the CPU); no need for an external LLM API
(OpenAI, Anthropic, ... SDKs or keys); and no private or unreachable data (data "available on
request", licensed corpora, and, unless offline, download links that do not answer). Each
exclusion says why, with the file and line that decided it.
"""

from __future__ import annotations

import logging
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from super_bench.errors import TaskSourceError
from super_bench.tasks.repos import git, is_remote

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 1_000_000
MAX_URLS = 10
URL_TIMEOUT = 10.0

_README = re.compile(r"^readme(\.(md|rst|txt|markdown))?$", re.I)
_MAIN = re.compile(
    r"""if\s+__name__\s*==\s*["']__main__["']|argparse\.ArgumentParser|@click\.command|fire\.Fire\(|typer\.run\(|"""
    r"""absl\.app\.run\(|app\.run\(main\)|HfArgumentParser"""
)
_README_RUNS = re.compile(r"\bpython[\d.]*\s+(?:-\S+\s+)*([\w./-]+\.py)\b")
_GPU = re.compile(
    r"""\.cuda\(|["']cuda(?::\d+)?["']|torch\.cuda\.set_device|^\s*(?:import|from)\s+(?:cupy|apex|flash_attn|pycuda|triton)\b|"""
    r"""CUDA_VISIBLE_DEVICES|numba\.cuda""",
    re.M,
)
_CPU = re.compile(
    r"""torch\.cuda\.is_available\(|["']cpu["']|--cpu\b|--no[-_]cuda|["']--device["']|map_location|\bno_cuda\b|\buse_cuda\b|"""
    r"""\bdevice\s*=\s*None"""
)
_GPU_REQUIREMENT = re.compile(r"^\s*(cupy[\w-]*|flash[-_]attn|apex|nvidia-[\w-]+|pycuda)\b", re.I | re.M)
_GPU_README = re.compile(r"\b(requires?|needs?)\s+(an?\s+)?(NVIDIA\s+|CUDA[- ]capable\s+)?GPUs?\b(?!.*\bCPU\b)", re.I)
_LLM_IMPORT = re.compile(
    r"^\s*(?:import|from)\s+(openai|anthropic|cohere|google\.generativeai|google\.genai|mistralai|groq|together|litellm)\b",
    re.M,
)
_LLM_KEY = re.compile(
    r"\b(OPENAI|ANTHROPIC|COHERE|GEMINI|GOOGLE|MISTRAL|TOGETHER|GROQ|DEEPSEEK|AZURE_OPENAI)_API_KEY\b"
)
_LLM_REQUIREMENT = re.compile(
    r"^\s*(openai|anthropic|cohere|google-generativeai|google-genai|mistralai|litellm|groq|together)\b", re.I | re.M
)
_PRIVATE = re.compile(
    r"available\s+(up)?on\s+(request|demand)|request\s+access|(contact|e-?mail)\s+(the\s+)?authors?\s+(for|to\s+(get|obtain|request))|"
    r"not\s+(publicly|freely)\s+available|(private|proprietary|confidential)\s+(data|dataset|corpus)|"
    r"Linguistic\s+Data\s+Consortium|\bLDC\d{4}|data\s+use\s+agreement|sign\w*\s+(a|the)\s+[\w\s-]{0,30}(agreement|licen[cs]e)",
    re.I,
)
_URL = re.compile(r"https?://[^\s)\]>\"'`]+")
_DATA_URL = re.compile(
    r"\.(zip|tar|tgz|gz|bz2|xz|7z|json|jsonl|csv|tsv|txt|pkl|pt|bin|h5|npy|npz|parquet)(\?|$)|"
    r"drive\.google\.com|docs\.google\.com|dropbox\.com|zenodo\.org|figshare|huggingface\.co/datasets|"
    r"s3\.amazonaws\.com|storage\.googleapis\.com",
    re.I,
)
_DATA_WORDS = re.compile(r"\b(data|dataset|datasets|download|corpus|checkpoints?|weights)\b", re.I)


@dataclass
class Repository:
    """A repository's working tree and what the task records of it."""

    source: str  # as given: a URL or a local path
    path: Path
    url: str  # what the task's github_repo will be
    commit: str | None
    files: list[str] = field(default_factory=list)
    readme: str | None = None  # the README's file name
    readme_text: str = ""
    scripts: list[str] = field(default_factory=list)  # runnable Python entrypoints

    @property
    def name(self) -> str:
        return re.sub(r"\.git$", "", self.url.rstrip("/").rsplit("/", 1)[-1]) or "repo"


def open_repository(source: str, workdir: Path) -> Repository:
    """A local path as it is, or a URL cloned into ``workdir``."""
    if is_remote(source):
        path = workdir / re.sub(r"[^\w.-]+", "-", source)[-80:]
        git("clone", "--quiet", "--depth", "1", "--", source, str(path))
        url = source
    else:
        path = Path(source).expanduser().resolve()
        if not path.is_dir():
            raise TaskSourceError(f"{source}: not a directory or a git URL")
        url = _origin(path) or str(path)
    commit = _head(path)
    files = _files(path, tracked=commit is not None)
    repo = Repository(source, path, url, commit, files)
    repo.readme = next((f for f in files if "/" not in f and _README.match(f)), None)
    if repo.readme:
        repo.readme_text = (path / repo.readme).read_text(encoding="utf-8", errors="replace")
    repo.scripts = _runnable(repo)
    return repo


def _origin(path: Path) -> str | None:
    try:
        return git("remote", "get-url", "origin", cwd=path).strip() or None
    except TaskSourceError:
        return None


def _head(path: Path) -> str | None:
    try:
        return git("rev-parse", "HEAD", cwd=path).strip()
    except TaskSourceError:
        return None


def _files(path: Path, *, tracked: bool) -> list[str]:
    if tracked:
        return sorted(git("ls-files", "-z", cwd=path).strip("\0").split("\0"))
    skip = {".git", ".venv", "venv", "node_modules", "__pycache__"}
    return sorted(
        str(p.relative_to(path)) for p in path.rglob("*") if p.is_file() and not skip & set(p.relative_to(path).parts)
    )


def _texts(repo: Repository, wanted: Callable[[str], bool]) -> Iterator[tuple[str, str]]:
    """(name, text) of the repository's files that ``wanted`` accepts, up to ``MAX_FILE_BYTES`` each."""
    for name in repo.files:
        if wanted(name):
            file = repo.path / name
            try:
                if file.stat().st_size <= MAX_FILE_BYTES:
                    yield name, file.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue


def _runnable(repo: Repository) -> list[str]:
    scripts = [name for name, text in _texts(repo, _is_python) if _MAIN.search(text)]
    mentioned = [m.group(1).removeprefix("./") for m in _README_RUNS.finditer(repo.readme_text)]
    return list(dict.fromkeys([m for m in mentioned if m in repo.files] + scripts))


def _first(pattern: re.Pattern[str], texts: list[tuple[str, str]]) -> str | None:
    """``file:line`` and the text of the first match of ``pattern``."""
    for name, text in texts:
        match = pattern.search(text)
        if match:
            line = text.count("\n", 0, match.start()) + 1
            return f"{name}:{line} ({match.group(0).strip()!r})"
    return None


def exclusion(repo: Repository, *, check_urls: bool = True) -> str | None:
    """Why the repository is not fit for an Auto task, or None when it is."""
    if repo.readme is None:
        return "no README at the repository's root"
    if not repo.scripts:
        return "no runnable Python entrypoint (no script with a __main__ block or a command-line parser)"
    code = list(_texts(repo, _is_python))
    requirements = list(_texts(repo, _is_requirements))
    readme = [(repo.readme, repo.readme_text)]
    gpu = _first(_GPU, code) or _first(_GPU_REQUIREMENT, requirements) or _first(_GPU_README, readme)
    if gpu and not _first(_CPU, code):
        return f"GPU-only code: {gpu}, and nothing selects the CPU"
    llm = _first(_LLM_IMPORT, code) or _first(_LLM_KEY, code + readme) or _first(_LLM_REQUIREMENT, requirements)
    if llm:
        return f"needs an external LLM API: {llm}"
    private = _first(_PRIVATE, readme)
    if private:
        return f"private data: {private}"
    if check_urls:
        for url in _data_urls(repo.readme_text)[:MAX_URLS]:
            problem = _unreachable(url)
            if problem:
                return f"unreachable data: {url} ({problem})"
    return None


def _is_python(name: str) -> bool:
    return name.endswith(".py")


def _is_requirements(name: str) -> bool:
    base = name.rsplit("/", 1)[-1].lower()
    return base.startswith("requirement") or base in (
        "environment.yml",
        "environment.yaml",
        "setup.cfg",
        "pyproject.toml",
    )


def _data_urls(readme: str) -> list[str]:
    urls = []
    for line in readme.splitlines():
        for found in _URL.findall(line):
            url = found.rstrip(".,;:")
            if _DATA_URL.search(url) or _DATA_WORDS.search(line):
                urls.append(url)
    return list(dict.fromkeys(urls))


def _unreachable(url: str) -> str | None:
    """Why a download link does not answer (missing, forbidden, no such host), or None if it does."""
    request = urllib.request.Request(url, method="HEAD", headers={"User-Agent": "super-bench"})
    try:
        with urllib.request.urlopen(request, timeout=URL_TIMEOUT):
            return None
    except urllib.error.HTTPError as e:
        if e.code in (401, 403, 404, 410):
            return f"HTTP {e.code}"
        return None  # rate limits, HEAD not allowed, server errors: not proof that the data is gone
    except (urllib.error.URLError, OSError, ValueError) as e:
        return str(getattr(e, "reason", e))
