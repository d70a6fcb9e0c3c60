"""A real install: the bundled real repository's ``pip install -r requirements.txt`` (UnsupervisedHierarchical-
SymbolicRegression, the requirements GPT-4o's recorded run installed), inside a task sandbox, with and without the
package cache. For each case: the wall time of the install, the disk the task's environment takes (and how much of
it is shared with the cache: files linked to it), and the bytes fetched from the index.

Cases, each in a fresh sandbox:
- ``off``: pip goes to the index itself (as the paper's environment did); bytes fetched are the sizes of the
  files pip's installation report says it took from the index (asked of the index afterwards);
- ``link, cold`` / ``copy, cold``: through the harness's cache, empty at the start (a fresh cache directory);
  bytes fetched are what the cache's store gained;
- ``link, warm``: the same again with the cache the cold run filled: nothing should be fetched.

The full list installs torch 2.1.2 with its CUDA libraries (about 5 GB, several minutes per case); ``--scope
small`` leaves out torch, triton and the ``nvidia-*`` libraries (the scientific stack alone, about 150 MB).

    python benchmarks/bench_real_install.py [--scope small|full] [--backend bwrap] [--cases off link-cold link-warm]

The repository is read from ``../shared/reference/repos`` (or SUPER_BENCH_REFERENCE_REPOS).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from common import Row, machine, seconds, table

REPOS = Path(
    os.environ.get("SUPER_BENCH_REFERENCE_REPOS") or Path(__file__).resolve().parents[2] / "shared/reference/repos"
)
BUNDLE = REPOS / "UnsupervisedHierarchicalSymbolicRegression.bundle"
# The part of the requirements that is torch and its CUDA libraries.
HEAVY = ("torch", "triton", "nvidia-")
CASES = {"off": ("off", False), "link-cold": ("link", False), "link-warm": ("link", True), "copy-cold": ("copy", False)}


def requirements(scope: str) -> str:
    """The repository's requirements.txt at its HEAD (the whole list, or without torch and CUDA for ``small``)."""
    text = subprocess.run(
        ["git", "--git-dir", str(BUNDLE), "show", "HEAD:requirements.txt"], capture_output=True, text=True
    ).stdout
    if not text:  # a bundle is no repository: read it through a clone
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["git", "clone", "-q", "--bare", str(BUNDLE), tmp + "/r"], check=True)
            text = subprocess.run(
                ["git", "--git-dir", tmp + "/r", "show", "HEAD:requirements.txt"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    if scope == "small":
        lines = [line for line in lines if not line.lower().startswith(HEAVY)]
    return "\n".join(lines) + "\n"


def tree_bytes(path: Path) -> tuple[int, int]:
    """Bytes of the regular files under ``path`` (each inode once), and of those also linked elsewhere."""
    seen: set[int] = set()
    total = shared = 0
    for directory, _, files in os.walk(path):
        for name in files:
            try:
                info = os.lstat(os.path.join(directory, name))
            except OSError:
                continue
            if not os.path.isfile(os.path.join(directory, name)) or info.st_ino in seen:
                continue
            seen.add(info.st_ino)
            total += info.st_size
            shared += info.st_size if info.st_nlink > 1 else 0
    return total, shared


def downloaded(report: Path) -> list[str]:
    """The addresses of the files pip installed from, in its installation report (``--report``)."""
    items = json.loads(report.read_text()).get("install", [])
    return [item["download_info"]["url"] for item in items if item.get("download_info", {}).get("url")]


def remote_size(url: str) -> int:
    """The size of a file on the index (0 for a local one)."""
    if not url.startswith(("http://", "https://")):
        return 0
    with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=60) as response:
        return int(response.headers.get("Content-Length") or 0)


def mib(value: int) -> str:
    return f"{value / 2**20:,.0f} MiB"


def install(backend: str, cache: str, cache_dir: Path, root: Path, wanted: str) -> dict[str, float]:
    from super_bench.sandbox import SandboxConfig, create_sandbox
    from super_bench.sandbox.backends.host import HostSandbox

    config = SandboxConfig(backend=backend, package_cache=cache, package_cache_dir=cache_dir, root=root)
    sandbox = create_sandbox(config, "real-install")
    sandbox.start()
    try:
        sandbox.write_file("requirements.txt", wanted.encode())
        store_before = tree_bytes(cache_dir / "files")[0] if (cache_dir / "files").is_dir() else 0
        start = time.perf_counter()
        report = "/tmp/install-report.json"  # the task's own /tmp, where a sandbox shows it (below: on the host)
        command = ["python", "-m", "pip", "install", "-q", "-r", "requirements.txt", "--report", report]
        done = sandbox.run(command, timeout=3600)
        took = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(f"pip install failed ({cache}): {(done.stdout + done.stderr)[-3000:]}")
        if not isinstance(sandbox, HostSandbox):
            raise RuntimeError(f"the {backend} sandbox keeps no task directory on this host to measure")
        host_root = sandbox.root
        disk, shared = tree_bytes(host_root / "python")
        if cache == "off":
            fetched = sum(map(remote_size, downloaded(host_root / "tmp" / "install-report.json")))
        else:
            fetched = tree_bytes(cache_dir / "files")[0] - store_before
        return {"seconds": took, "disk": disk, "shared": shared, "fetched": fetched}
    finally:
        sandbox.stop()


def rows(backend: str, scope: str, cases: list[str]) -> list[Row]:
    wanted = requirements(scope)
    found: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-real-install-") as tmp:
        os.chmod(tmp, 0o755)  # agent code of a user of its own reaches its task directory below
        for case in cases:
            cache, warm = CASES[case]
            cache_dir = Path(tmp) / f"cache-{cache}"  # a cold case starts empty; the warm one reuses the cold one's
            if not warm and cache_dir.exists():
                cache_dir = Path(tmp) / f"cache-{cache}-{len(found)}"
            measured = install(backend, cache, cache_dir, Path(tmp) / "tasks", wanted)
            found.append(
                Row(
                    "real install",
                    f"{scope}, {backend}, cache {case}",
                    f"{seconds(measured['seconds'])}; disk {mib(int(measured['disk']))} "
                    f"({mib(int(measured['shared']))} linked to the cache); fetched {mib(int(measured['fetched']))}",
                )
            )
            print(found[-1], file=sys.stderr, flush=True)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scope", choices=["small", "full"], default="small")
    parser.add_argument("--backend", default="bwrap")
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=["off", "link-cold", "link-warm"])
    args = parser.parse_args()
    if not BUNDLE.is_file():
        sys.exit(f"{BUNDLE} is not here (set SUPER_BENCH_REFERENCE_REPOS)")
    print("\n".join(machine()))
    print(table(rows(args.backend, args.scope, args.cases)))


if __name__ == "__main__":
    main()
