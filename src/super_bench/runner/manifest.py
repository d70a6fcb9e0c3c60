"""The run manifest (``run.json``, a ``RunManifest``): what was run, from which tasks, with which
versions; and the check that a run being resumed is the same run.

A run's identity is every setting that can change its scores: the agent, model, seed and settings,
the task source and set, the scoring mode, the environment's limits and the sandbox's settings.
Resuming into a directory whose manifest names another identity would mix two runs in one table,
so it is refused. What is not identity is listed (``NOT_IDENTITY``): a setting added later is part
of the identity until it is listed there.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from super_bench._files import read_regular
from super_bench.errors import RunDirError
from super_bench.runner.records import RUN_SCHEMA_VERSION, Executor, RunManifest, TaskSource
from super_bench.sandbox import describe_backend, resolve_backend
from super_bench.tasks.loaders import TASK_FILE_SUFFIXES

if TYPE_CHECKING:
    from super_bench.runner.config import RunConfig
    from super_bench.runner.rundir import RunDir


def _is_named_source(source: str) -> bool:
    return source in ("demo", "hf") or source.startswith("hf:")


# The settings of a RunConfig (by dotted name; a name covers the settings under it) that cannot change a
# run's scores: which of its tasks and epochs run now (a resume may add more), how and where the run is
# executed and written, and how long and how often the model service is tried (a failure there is an
# infrastructure failure, retried and left out of the means). docs/runner.md#resume says why each.
NOT_IDENTITY = frozenset(
    {
        "task_ids",
        "limit",
        "skip_invalid",
        "epochs",
        "out",
        "redo",
        "adopt",
        "executor",
        "workers",
        "prestart",
        "ray",
        "infra_retries",
        "order",
        "env.sandbox.root",
        "env.sandbox.keep",
        "env.sandbox.engine",
        "env.sandbox.package_cache_dir",
        "model_options.cache",
        "model_options.timeout",
        "model_options.max_retries",
    }
)


def settings(model: BaseModel, prefix: str = "") -> dict[str, Any]:
    """Every setting of ``model`` by its dotted name (``env.sandbox.memory_limit``), nested models flattened."""
    found: dict[str, Any] = {}
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            found.update(settings(value, f"{prefix}{name}."))
        else:
            found[prefix + name] = value
    return found


def _is_identity(name: str) -> bool:
    return not any(name == other or name.startswith(f"{other}.") for other in NOT_IDENTITY)


def flat_name(name: str) -> str:
    """A setting's dotted name as it was before RunConfig was grouped (``agent.name`` is ``agent``,
    ``execution.ray.cpus`` is ``ray.cpus``): the names run.json's identity has always had."""
    from super_bench.runner.config import FLAT

    for flat, (part, field) in FLAT.items():
        grouped = f"{part}.{field}"
        if name == grouped or name.startswith(f"{grouped}."):
            return flat + name.removeprefix(grouped)
    return name


def flat_settings(config: RunConfig) -> dict[str, Any]:
    """Every setting of a run by its dotted flat name (``agent``, ``ray.cpus``, ``env.sandbox.memory_limit``)."""
    return {flat_name(name): value for name, value in settings(config).items()}


def identity(config: RunConfig) -> dict[str, Any]:
    """What makes two runs the same run: each setting that can change the scores, by its dotted flat name,
    as JSON. Paths are made absolute, the task set and the sandbox backend resolved."""
    value = {name: _absolute(v) for name, v in flat_settings(config).items() if _is_identity(name)}
    source = config.tasks.source
    source = source if _is_named_source(source) else str(Path(source).expanduser().resolve())
    value.update(
        {
            "source": source,
            "task_set": config.resolved_set(),
            "env.sandbox.backend": resolve_backend(config.env.sandbox.backend),
        }
    )
    normal: dict[str, Any] = json.loads(json.dumps(value, default=str))
    return normal


def identity_sha256(value: dict[str, Any]) -> str:
    """The digest of an identity that each result row carries (``identity_sha256``): the check a resume can
    still make when ``run.json`` is lost."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _absolute(value: Any) -> Any:
    return value.expanduser().resolve() if isinstance(value, Path) else value


def check_same_run(path: Path, previous: RunManifest | None, current: dict[str, Any]) -> None:
    """Refuse to resume into a run directory that describes a different run. Only the settings both
    identities name are compared: a run written by an earlier version names fewer."""
    before = previous.identity if previous is not None else None
    if before is None:
        return  # written before manifests had an identity, or not by the runner: nothing to compare
    differences = [
        f"{key} {before[key]!r} there, {value!r} now"
        for key, value in current.items()
        if key in before and before[key] != value
    ]
    if differences:
        raise RunDirError(
            f"{path} holds a different run ({'; '.join(differences)}); give another --out, "
            "or pass --redo to replace that run"
        )


def build_manifest(config: RunConfig, run_dir: RunDir, previous: RunManifest | None) -> RunManifest:
    from super_bench._version import __version__

    now = datetime.now().astimezone()
    supply = describe_backend(config.env.sandbox).supply
    execution = config.execution
    executor = Executor(
        name=execution.executor, workers=execution.workers, epochs=execution.epochs, task_threads=config.task_threads()
    )
    if execution.executor == "ray":
        executor.ray = execution.ray.model_dump(mode="json")
    manifest = RunManifest(
        schema_version=RUN_SCHEMA_VERSION,
        super_bench_version=__version__,
        python=sys.version.split()[0],
        platform=platform.platform(),
        command=sys.argv,
        created_at=(previous.created_at if previous is not None else None) or now,
        identity=identity(config),
        tasks=_task_source(config, run_dir),
        # Where the tasks' repositories and packages came from (mirrors, index, date), as the sandbox tells it.
        sandbox={"backend": resolve_backend(config.env.sandbox.backend), **(supply or {})},
        executor=executor,
        config=config.flat(),
    )
    if previous is not None:
        manifest.resumed_at = [*previous.resumed_at, now]
    return manifest


def _task_source(config: RunConfig, run_dir: RunDir) -> TaskSource:
    """The source, set and revision of the tasks, and a digest of the records run (``sha256sum tasks.jsonl``)."""
    records = read_regular(run_dir.path / "tasks.jsonl")
    info = TaskSource(
        source=config.tasks.source if config.tasks.query is None else "query",
        set=config.resolved_set(),
        n_tasks=sum(1 for line in records.splitlines() if line.strip()),
        sha256=hashlib.sha256(records).hexdigest(),
    )
    if config.tasks.query is not None:
        return info
    if config.tasks.source == "demo":
        from super_bench._version import __version__

        info.revision = f"bundled with super-bench {__version__}"
    elif config.tasks.source == "hf" or config.tasks.source.startswith("hf:"):
        info.revision = _hub_revision(config.tasks.source[3:])
    else:
        info.source_sha256 = _source_digest(Path(config.tasks.source).expanduser())
    return info


def _hub_revision(spec: str) -> str | None:
    """The dataset's commit: the one asked for, else the Hub's current one (None when unknown)."""
    from super_bench.tasks.hub import DEFAULT_REPO

    repo, _, revision = (spec or DEFAULT_REPO).partition("@")
    if revision or Path(repo).exists():
        return revision or None
    try:
        from huggingface_hub import HfApi

        sha = HfApi().dataset_info(repo, timeout=10).sha
    except Exception:  # offline, or no such dataset: the tasks' digest still identifies them
        return None
    return str(sha) if sha else None


def _source_digest(path: Path) -> str | None:
    """sha256 of a task file, or of a directory's task files (by name and content)."""
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    if not path.is_dir():
        return None
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(TASK_FILE_SUFFIXES)):
        digest.update(f"{file.relative_to(path)}\0{hashlib.sha256(file.read_bytes()).hexdigest()}\n".encode())
    return digest.hexdigest()


def add_task_environment(manifest: RunManifest, config: RunConfig, run_dir: RunDir) -> None:
    """Record the task environment (and how it differs from the paper's), its packages and how the limits
    and the package cache work, as the sandbox describes them, in the manifest."""
    description = describe_backend(config.env.sandbox, packages=True)
    manifest.task_environment = description.task_environment
    manifest.sandbox["memory_enforcement"] = description.memory_enforcement
    manifest.sandbox["disk_enforcement"] = description.disk_enforcement
    manifest.sandbox["package_cache"] = description.package_cache
    run_dir.write_manifest(manifest)


def record_upstreams(manifest: RunManifest, config: RunConfig, run_dir: RunDir) -> None:
    """At the end of a run, the package cache's upstream indexes, where a task's install has found them."""
    from super_bench.sandbox.supply import known_upstreams

    cache = manifest.sandbox.get("package_cache")
    if not isinstance(cache, dict) or cache.get("upstreams") is not None:
        return
    indexes = known_upstreams(config.env.sandbox)
    if indexes is not None:
        cache["upstreams"] = list(indexes)
        run_dir.write_manifest(manifest)
