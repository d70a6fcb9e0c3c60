"""Auto tasks generated from repositories' READMEs (``super-bench construct autogen``).

Each repository is screened (see ``repos``); for those kept, the model gets the README and the
list of runnable scripts and answers with a task as a JSON object: ``query`` and ``entrypoint``
(the script whose run is graded), and the ``goal``, ``dataset``, ``model`` and script
``arguments`` it chose (kept in ``query_components``). The reply is validated (JSON, a query, an
entrypoint that is a file of the repository); a bad reply is answered with what is wrong, up to
``retries`` times. A task that repeats one already made (same repository and entrypoint, nearly
the same query) is dropped.
"""

from __future__ import annotations

import difflib
import json
import logging
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, ValidationError

from super_bench._pydantic import Model
from super_bench.construct.repos import Repository, exclusion, open_repository
from super_bench.errors import ModelError, TaskSourceError
from super_bench.models import ChatModel, Message, ModelRequest
from super_bench.tasks.model import Task
from super_bench.tasks.repos import find_files
from super_bench.trajectory import Usage

log = logging.getLogger(__name__)

README_CHARS = 12_000
MAX_FILES_SHOWN = 200
DUPLICATE_RATIO = 0.85

_SYSTEM = (
    "You write tasks for SUPER, a benchmark in which agents set up and run experiments from research repositories "
    "in a Jupyter notebook on a machine with a CPU and no GPU. A task asks the agent to run one experiment of the "
    "repository (train or evaluate a model on a dataset) with one of its scripts."
)
_FORMAT = (
    'Reply with one JSON object and nothing else: {"query": "the task, written to the agent", "entrypoint": "the '
    'script to run, as a path from the repository root", "goal": "what the experiment does", "dataset": "the data '
    'it uses", "model": "the model it trains or evaluates", "arguments": "the arguments to give the script"}'
)


class TaskReply(Model):
    """The task as the model states it."""

    model_config = ConfigDict(extra="ignore")

    query: str = Field(min_length=10)
    entrypoint: str = Field(min_length=1)
    goal: str | None = None
    dataset: str | None = None
    model: str | None = None
    arguments: Any = None


@dataclass
class AutogenReport:
    tasks: list[Task] = field(default_factory=list)
    excluded: list[tuple[str, str]] = field(default_factory=list)  # (repository, why)
    duplicates: list[tuple[str, str]] = field(default_factory=list)  # (repository, which task it repeats)
    usage: Usage = field(default_factory=Usage)


def parse_reply(text: str, files: list[str]) -> TaskReply:
    """The task in a reply, with its entrypoint resolved to a repository path; ValueError says what is wrong."""
    fenced = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.S)
    body = fenced.group(1) if fenced else text[text.find("{") : text.rfind("}") + 1]
    try:
        data = json.loads(body)
    except json.JSONDecodeError as e:
        raise ValueError(f"the reply is not a JSON object ({e.msg})") from e
    try:
        reply = TaskReply.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())
        raise ValueError(f"the JSON object is not a task ({problems})") from e
    script = next((w for w in reply.entrypoint.split() if w.endswith((".py", ".sh"))), reply.entrypoint.strip())
    paths = find_files(files, script)
    if len(paths) > 1:
        raise ValueError(f"the entrypoint {script!r} names several files ({', '.join(paths[:5])}): give its path")
    if not paths:
        runnable = ", ".join(f for f in files if f.endswith(".py"))[:800]
        raise ValueError(f"the entrypoint {script!r} is not a file of the repository (its Python files: {runnable})")
    return reply.model_copy(update={"entrypoint": paths[0]})


def _prompt(repo: Repository, made: list[Task]) -> str:
    files = "\n".join(repo.files[:MAX_FILES_SHOWN])
    more = f"\n... and {len(repo.files) - MAX_FILES_SHOWN} more" if len(repo.files) > MAX_FILES_SHOWN else ""
    readme = repo.readme_text[:README_CHARS]
    text = (
        f"Repository: {repo.url}\n\nRunnable scripts: {', '.join(repo.scripts)}\n\nFiles:\n{files}{more}\n\n"
        f"README ({repo.readme}):\n<readme>\n{readme}\n</readme>\n\n"
        "Write one task that runs an experiment of this repository as its README describes. Keep it feasible on a "
        "CPU in minutes: ask for a small model, a few examples or a single epoch where that applies, and say so in "
        "the query.\n"
    )
    if made:
        text += "Make it different from these tasks, already written:\n" + "\n".join(f"- {t.query}" for t in made)
    return text + "\n" + _FORMAT


def ask_task(model: ChatModel, repo: Repository, made: list[Task], retries: int, usage: Usage) -> TaskReply:
    """The model's task for ``repo``; ValueError when it gave no valid one after ``retries`` corrections."""
    messages: list[Message] = [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": _prompt(repo, made)}]
    corrections = 0
    while True:
        response = model.complete(ModelRequest(messages=messages, max_tokens=1000, temperature=0.2))
        usage.add(response.usage)
        try:
            return parse_reply(response.text, repo.files)
        except ValueError as e:
            if corrections == retries:
                raise
            corrections += 1
            messages += [
                {"role": "assistant", "content": response.text},
                {"role": "user", "content": f"That is not usable: {e}. {_FORMAT}"},
            ]


def duplicate_of(task: Task, others: list[Task]) -> Task | None:
    """An earlier task that ``task`` repeats: same repository and entrypoint and nearly the same query."""
    words = _normal(task.query)
    for other in others:
        same_script = other.github_repo == task.github_repo and other.entrypoint == task.entrypoint
        ratio = difflib.SequenceMatcher(None, words, _normal(other.query)).ratio()
        if (same_script and ratio >= DUPLICATE_RATIO) or words == _normal(other.query):
            return other
    return None


def _normal(query: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", query.split("\n\nGit repository:", maxsplit=1)[0].lower()).split())


def auto_task(repo: Repository, reply: TaskReply, task_id: str, model: str, min_runtime: float | None) -> Task:
    footer = f"\n\nGit repository: {repo.url}" + (f"\nCommit: {repo.commit}" if repo.commit else "")
    components = {k: v for k, v in reply.model_dump(include={"goal", "dataset", "model", "arguments"}).items() if v}
    return Task(
        task_id=task_id,
        query=reply.query.strip() + footer,
        task_set="auto",
        entrypoint=reply.entrypoint,
        min_runtime=min_runtime,
        github_repo=repo.url,
        git_commit=repo.commit,
        query_components=components or None,
        metadata={"generated_by": model},
    )


def autogen(
    sources: list[str],
    model: ChatModel,
    *,
    existing: list[Task] | None = None,
    per_repo: int = 1,
    retries: int = 2,
    check_urls: bool = True,
    min_runtime: float | None = None,
) -> AutogenReport:
    """Auto tasks for the repositories that pass the screen, ``per_repo`` each (fewer when they repeat)."""
    report = AutogenReport()
    known = list(existing or [])
    ids = {t.task_id for t in known}
    with tempfile.TemporaryDirectory(prefix="super-bench-autogen-") as tmp:
        for n, source in enumerate(sources):
            try:
                repo = open_repository(source, Path(tmp) / str(n))
            except TaskSourceError as e:
                report.excluded.append((source, f"cannot read the repository: {e}"))
                continue
            why = exclusion(repo, check_urls=check_urls)
            if why:
                log.info("excluded %s: %s", source, why)
                report.excluded.append((source, why))
                continue
            made: list[Task] = []
            for _ in range(per_repo):
                try:
                    reply = ask_task(model, repo, made, retries, report.usage)
                except (ValueError, ModelError) as e:
                    report.excluded.append((source, f"the model gave no valid task: {e}"))
                    break
                task_id = _free_id(f"{repo.name}-auto", ids)
                task = auto_task(repo, reply, task_id, model.spec, min_runtime)
                repeated = duplicate_of(task, known + made)
                if repeated is not None:
                    report.duplicates.append((source, repeated.task_id))
                    continue
                ids.add(task_id)
                made.append(task)
            report.tasks.extend(made)
            known.extend(made)
    return report


def _free_id(base: str, taken: set[str]) -> str:
    base = re.sub(r"[^\w.-]+", "-", base)
    n = 1
    while (candidate := base if n == 1 else f"{base}-{n}") in taken:
        n += 1
    return candidate
