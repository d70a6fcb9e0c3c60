"""Where a verification runs (``super-bench verify``): a run directory is anyone's data (a colleague's, a
leaderboard submission), so nothing in it decides where or how code runs on this machine.

From the run's ``run.json`` a replay takes only what names no path and runs nothing: the episode's budgets
and timeouts, the scoring mode, and the sandbox's limits and package date. Everything else the run asked
for (its backend, network, interpreter, caches, mirrors, index, image, variables) is refused and listed;
the caller's own options give it instead. Without options a replay runs in ``bwrap`` with the network
off; ``local`` (no isolation) only when the caller names it. The run's settings are read as plain JSON,
never through ``SandboxConfig``'s checks of the paths it names: checking a path is already opening it.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter, ValidationError

from super_bench._names import ScoreMode
from super_bench.environment import EnvConfig
from super_bench.errors import ConfigError, RunDirError
from super_bench.runner.rundir import RunDir
from super_bench.runner.verify_records import VerifyEnvironment
from super_bench.sandbox import SANDBOXES, SandboxConfig, resolve_backend

# The run's sandbox settings a replay keeps: limits and a date, which neither name a path nor choose code.
KEPT = (
    "memory_limit",
    "memory_enforcement",
    "max_processes",
    "max_file_size",
    "disk_limit",
    "disk_enforcement",
    "wall_time_limit",
    "packages_as_of",
    "package_cache",
)
DEFAULT_BACKEND = "bwrap"
_WHY = {
    "backend": "a run directory does not choose where code runs (--sandbox does)",
    "network": "the network stays off unless --network on is given",
    "env": "variables for agent code are not taken from a run directory",
    "image": "a run directory does not choose the container image (--image does)",
    "engine": "a run directory does not choose the container engine (--engine does)",
    "pip_index": "a run directory does not choose the package index (--pip-index does)",
}
_PATH = "names a path on the machine that made the run: not opened here (give this machine's with its option)"


def replay_environment(run_dir: RunDir, given: dict[str, Any]) -> tuple[EnvConfig, ScoreMode, VerifyEnvironment]:
    """The environment of a verification's replays, its scoring mode, and the record of what the run asked
    for and what was refused. ``given``: the sandbox settings the caller's options gave."""
    manifest = run_dir.read_manifest()
    config = manifest.config if manifest is not None else {}
    env_asked = _mapping(config.get("env"))
    asked = _mapping(env_asked.get("sandbox"))
    where = run_dir.path / "run.json"
    try:
        episode = EnvConfig.model_validate({k: v for k, v in env_asked.items() if k != "sandbox"})
        mode: ScoreMode = TypeAdapter(ScoreMode).validate_python(config.get("mode", "corrected"))
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors()[:3])
        raise RunDirError(f"{where}: its config cannot be read ({problems})") from None
    kept = {k: asked[k] for k in KEPT if k in asked}
    settings = {**kept, "backend": DEFAULT_BACKEND, "network": False, **given}
    backend = resolve_backend(settings["backend"])
    if not SANDBOXES.get(backend).isolates and given.get("backend") != backend:
        raise ConfigError(
            f"--sandbox {settings['backend']} would replay in the {backend} sandbox, which does not isolate the "
            f"replayed code; a run directory's actions run there only when --sandbox {backend} is given"
        )
    try:
        sandbox = SandboxConfig.model_validate(settings)
    except ValidationError as e:
        error = e.errors()[0]
        field = ".".join(map(str, error["loc"]))
        source = "the option given" if error["loc"] and error["loc"][0] in given else f"{where} (env.sandbox)"
        raise ConfigError(f"sandbox settings: {field}: {error['msg']} (from {source})") from None
    used = sandbox.model_dump(mode="json", exclude={"root"})
    refused = [
        f"{name} = {_shown(value)}: {_WHY.get(name, _PATH)}"
        for name, value in asked.items()
        if name not in (*KEPT, "root", "keep") and value != used.get(name)
    ]
    record = VerifyEnvironment(asked=asked, sandbox=used, given=sorted(given), refused=refused)
    return episode.model_copy(update={"sandbox": sandbox}), mode, record


def _shown(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
