"""The first hour of a new user: the README's commands run as written, in its order, in a terminal of
80 columns, each with the output the README promises. Commands that need the network, an API key or a
cluster are run for their clear error, or (where they would build or run for long) resolved against
the command line; the long ones run in the slow tier. Every command the README or a message suggests
must exist."""

from __future__ import annotations

import ast
import functools
import importlib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import entry_points, metadata, requires
from pathlib import Path

import click
import pytest
from packaging.requirements import Requirement
from tests.support.helpers import REFERENCE_TRAJECTORIES
from tests.support.shared_runs import RUN_DIR, Home, SharedRuns, copy_run

import super_bench as sb
from super_bench import RunConfig, load_tasks
from super_bench.agents import AGENTS
from super_bench.cli import main
from super_bench.errors import ConfigError, SandboxError
from super_bench.models import MODELS
from super_bench.runner.executors import EXECUTORS
from super_bench.sandbox import SANDBOXES, SandboxConfig

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TINYREG = "https://github.com/super-bench-demo/tinyreg"


def readme_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), re.DOTALL)


def readme_commands() -> list[str]:
    """The super-bench commands of the README's shell blocks, in order, without their comments."""
    commands = []
    for block in readme_blocks("bash"):
        for line in block.splitlines():
            for part in line.split(" # ")[0].split(" && "):
                if part.strip().startswith("super-bench"):
                    commands.append(part.strip())
    return list(dict.fromkeys(commands))


# -- what the README promises, command by command ------------------------------------------------
def table_lines(text: str) -> list[str]:
    assert "…" not in text, text  # nothing cut short
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines), text
    return lines


def whole_ids(text: str, task_set: str) -> None:
    """Every task id of the set stands whole on a line of its own table row."""
    for task in load_tasks("demo", task_set):
        assert re.search(rf"(^|[│ ]){re.escape(task.task_id)}( |$)", text, re.MULTILINE), (task.task_id, text)


def run_directory(home: Home, result: subprocess.CompletedProcess[str], name: str) -> Path:
    found = RUN_DIR.search(result.stdout)
    assert found, result.stdout
    assert re.fullmatch(rf"runs/\d{{8}}-\d{{6}}-{name}", found.group(1)), found.group(1)
    path = home.path / found.group(1)
    assert not (path / ".lock").exists()  # held only while the run runs
    return path


def quick_start(home: Home, result: subprocess.CompletedProcess[str]) -> None:
    # "prints a progress bar, then a score table, and leaves everything under runs/<time>-expert-gold/"
    assert "tasks" in result.stderr and "9/9" in result.stderr
    lines = table_lines(result.stdout)
    whole_ids(result.stdout, "expert")
    assert any(re.match(r"│ mean +│.*1\.00", line) for line in lines), result.stdout
    assert any(re.match(r"│ tasks +│.* 9 │.* 7 │", line) for line in lines), result.stdout  # entrypoint: 7 tasks
    run = run_directory(home, result, "expert-gold")
    # ... and how to look at it, as the last line; the demo needs nothing of SUPER's environment.
    assert result.stdout.strip().splitlines()[-1] == f"See every step: super-bench view {run.relative_to(home.path)}"
    assert "WARNING" not in result.stderr, result.stderr
    assert {"run.json", "tasks.jsonl", "results.jsonl", "summary.json"} <= {p.name for p in run.iterdir()}
    for task in load_tasks("demo", "expert"):
        assert (run / "tasks" / task.task_id / "trajectory.json").is_file()
        assert (run / "tasks" / task.task_id / "trajectory.ipynb").is_file()
    assert json.loads((run / "summary.json").read_text())["metrics"]["output_match"] == 1.0


def tasks_list(task_set: str) -> Callable[[Home, subprocess.CompletedProcess[str]], None]:
    def check(home: Home, result: subprocess.CompletedProcess[str]) -> None:
        table_lines(result.stdout)
        whole_ids(result.stdout, task_set)
        assert f"{len(load_tasks('demo', task_set))} {task_set} task(s) from demo" in result.stdout

    return check


def write_actions(home: Home) -> None:
    (task,) = load_tasks("demo", "expert", task_ids=["tinyreg"])
    actions = [a.model_dump(mode="json") for a in task.solution] + [{"type": "submit", "content": task.answer}]
    (home.path / "actions.json").write_text(json.dumps(actions))


def replayed(home: Home, result: subprocess.CompletedProcess[str]) -> None:
    run = run_directory(home, result, "expert-replay")
    (row,) = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert row["task_id"] == "tinyreg" and row["metrics"]["output_match"] == 1.0


def played(home: Home, result: subprocess.CompletedProcess[str]) -> None:
    run_directory(home, result, "play-tinyreg")
    assert re.search(r"│ tinyreg +│ +\d+ │ +1\.00 │", result.stdout), result.stdout


def play_input() -> str:
    (task,) = load_tasks("demo", "expert", task_ids=["tinyreg"])
    cells = "".join(f":cell\n{action.content}\n:end\n" for action in task.solution)
    return cells + f":submit {json.dumps(task.answer)}\n"


def rescored(home: Home, result: subprocess.CompletedProcess[str]) -> None:
    table_lines(result.stdout)
    whole_ids(result.stdout, "expert")
    # Into a new run directory beside runs/, as the README says; the run itself keeps its scores.
    rescored_run = home.path / "runs-rescored" / (Path(home.runs["runs/<run>"]).name + "-reference")
    assert json.loads((rescored_run / "summary.json").read_text())["mode"] == "reference"
    assert json.loads((home.path / home.runs["runs/<run>"] / "summary.json").read_text())["mode"] == "corrected"


def verified(home: Home, result: subprocess.CompletedProcess[str]) -> None:
    assert "reproduced: 1 of 1 answer(s) checked" in result.stdout, result.stdout
    rows = (home.path / home.runs["runs/<run>"] / "verify.jsonl").read_text().splitlines()
    assert [json.loads(row)["reproduced"] for row in rows] == [True]


def write_task_file(home: Home) -> None:
    home.sh("super-bench tasks list --json > my_tasks.jsonl")


def write_solved_notebook(home: Home) -> None:
    shutil.copy(
        home.path / home.runs["runs/<run>"] / "tasks" / "tinyreg" / "trajectory.ipynb", home.path / "solved.ipynb"
    )


def from_notebook(home: Home, result: subprocess.CompletedProcess[str]) -> None:
    # Off a terminal the suggested landmarks cannot be reviewed: the message says how to accept them.
    assert result.returncode == 2 and "--yes" in result.stderr
    (command,) = [substitute(home, c) for c in CHECKS if "from-notebook" in c]
    accepted = home.sh(command + " --yes --out expert.jsonl")
    assert accepted.returncode == 0, accepted.stderr
    (task,) = load_tasks(home.path / "expert.jsonl")
    assert task.github_repo == TINYREG and task.answer == {"test_mse": 7.4031} and task.landmarks


def viewed(home: Home, result: subprocess.CompletedProcess[str]) -> None:
    from rich.filesize import decimal

    page = home.path / home.runs["runs/<run>"] / "view.html"
    assert f"({decimal(page.stat().st_size)})" in result.stdout.replace("\n", "")


def link_trajectories(home: Home) -> None:
    sample = REFERENCE_TRAJECTORIES / "react-super_expert"
    if sample.is_dir():
        (home.path / "trajectories").mkdir()
        (home.path / "trajectories" / "gpt-4o-2024-08-06_react-super_expert").symlink_to(sample)


def imported(home: Home, result: subprocess.CompletedProcess[str]) -> None:
    if not (home.path / "trajectories").exists():
        pytest.skip("the paper's sample trajectories are not here (see SUPER_BENCH_REFERENCE_TRAJECTORIES)")
    assert result.returncode == 0, result.stderr
    table_lines(result.stdout)
    assert "45 imported" in result.stdout and (home.path / "paper" / "gpt-4o" / "results.jsonl").is_file()


def analyzed(home: Home, result: subprocess.CompletedProcess[str]) -> None:
    # "why each failed task failed ... per category": the table of causes, whole at 80 columns
    assert "by primary cause" in result.stdout and "category" in result.stdout, result.stdout
    table_lines(result.stdout)


def compared(home: Home, result: subprocess.CompletedProcess[str]) -> None:
    # "differences with paired bootstrap intervals, flips": the one task both runs share solved in both
    assert "interval" in result.stdout and "solved" in result.stdout, result.stdout
    table_lines(result.stdout)


def leaderboard(home: Home, result: subprocess.CompletedProcess[str]) -> None:
    board = (home.path / "board.md").read_text()
    assert home.runs["runs/<run>"].split("/")[1] in board and home.runs["runs/<b>"].split("/")[1] in board


def sandboxes(home: Home, result: subprocess.CompletedProcess[str]) -> None:
    assert re.search(r"--sandbox auto uses: (bwrap|docker|local)", result.stdout), result.stdout
    table_lines(result.stdout)


@dataclass
class Check:
    """How a README command is tried: ``run`` here, ``slow`` in the slow tier, ``error`` for the
    message (a regex) that tells what it needs, ``resolve`` against the command line only."""

    how: str
    shape: Callable[[Home, subprocess.CompletedProcess[str]], None] | None = None
    prepare: Callable[[Home], None] | None = None
    error: str = ""
    stdin: Callable[[], str] | None = None
    env: dict[str, str] = field(default_factory=dict)
    ok: bool = True  # a `run` that must exit 0


NEEDS_KEY = r"needs an API key: set OPENAI_API_KEY"
CHECKS: dict[str, Check] = {
    "super-bench run": Check("run", quick_start),
    "super-bench tasks list": Check("run", tasks_list("expert")),
    "super-bench tasks list --set masked": Check("run", tasks_list("masked")),
    "super-bench run --set masked": Check("slow"),
    # Without network (HF_HUB_OFFLINE), the error says how to get a local copy; the hint resolves below.
    "super-bench run --source hf --set expert --limit 5": Check(
        "error", error=r"cannot reach the Hugging Face Hub[\s\S]*hf download allenai/super", env={"HF_HUB_OFFLINE": "1"}
    ),
    "super-bench run --agent replay:actions.json --task-ids tinyreg": Check("run", replayed, write_actions),
    "super-bench run --agent react-super --model openai/gpt-4o --set masked": Check("error", error=NEEDS_KEY),
    "super-bench play tinyreg": Check("run", played, stdin=play_input),
    "super-bench run --agent react-super --model openai/gpt-4o --query "
    '"Clone https://github.com/super-bench-demo/tinyreg and report its test MSE."': Check("error", error=NEEDS_KEY),
    "super-bench score runs/<run> --mode reference": Check("run", rescored),
    "super-bench verify runs/<run> --task-ids tinyreg": Check("run", verified),
    "super-bench tasks validate my_tasks.jsonl": Check("run", prepare=write_task_file),
    'super-bench construct from-notebook solved.ipynb --repo URL --query "..."': Check(
        "run", from_notebook, write_solved_notebook, ok=False
    ),
    "super-bench construct mask --out masked.jsonl": Check("slow"),
    "super-bench construct autogen URL... --model openai/gpt-4o --out auto.jsonl": Check("error", error=NEEDS_KEY),
    "super-bench doctor --set masked": Check("slow"),
    "super-bench mirror --source hf --out offline --wheels": Check(
        "error", error=r"cannot reach the Hugging Face Hub[\s\S]*hf download allenai/super", env={"HF_HUB_OFFLINE": "1"}
    ),
    # Runs from the bundle the command above makes (with the network): tested in test_offline_bundle.
    "super-bench run --offline-bundle offline --network off": Check("resolve"),
    "super-bench view runs/<run>": Check("run", viewed),
    "super-bench import-trajectories trajectories/gpt-4o-2024-08-06_react-super_expert --out paper/gpt-4o": Check(
        "run", imported, link_trajectories, ok=False
    ),
    "super-bench analyze runs/<run>": Check("run", analyzed),
    "super-bench compare runs/<a> runs/<b>": Check("run", compared),
    "super-bench leaderboard runs/* --out board.md": Check("run", leaderboard),
    "super-bench sandbox check": Check("run", sandboxes),
    "super-bench run --network off --memory-limit 8g": Check("slow"),
    # Builds a Python environment from the package index: minutes, and the network.
    "super-bench sandbox build": Check("resolve"),
    "super-bench run --set masked --workers 4 --out runs/masked": Check("slow"),
    # 85 gold runs; its options are resolved, and --epochs is run in test_runner.
    "super-bench run --set masked --epochs 5 --out runs/masked-5": Check("resolve"),
    # Needs a Ray cluster; whatever runs at `auto` on this machine is not the test's to use.
    "super-bench run --executor ray --ray-address auto": Check("resolve"),
    # Sixteen tasks with 20 GB of disk and 8 GB of memory each wait here until the machine has room for
    # each: its options are resolved, and the waiting is run in test_admission.
    "super-bench run --workers 16 --disk-limit 20g --memory-limit 8g": Check("resolve"),
}


def substitute(home: Home, command: str) -> str:
    """The README's placeholders, as the reader fills them in."""
    for placeholder, value in home.runs.items():
        command = command.replace(placeholder, value)
    return command.replace("URL...", TINYREG).replace("--repo URL", f"--repo {TINYREG}")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, shared_runs: SharedRuns) -> Home:
    """The README's commands that run here, in its order, from a fresh directory. The demo run is the
    session's shared one (tests/support/shared_runs.py), copied in: the later commands write into it."""
    user = Home(tmp_path_factory.mktemp("home"))
    for command in readme_commands():
        check = CHECKS.get(command)
        if check is None or check.how not in ("run", "error"):
            continue
        if check.prepare is not None:
            check.prepare(user)
        if command == "super-bench run":
            shared = shared_runs.get(command)
            copy_run(shared, user.path)
            result = shared.result
        else:
            result = user.sh(substitute(user, command), stdin=check.stdin() if check.stdin else None, **check.env)
        user.results[command] = result
        # The runs the later commands look at: the demo run, and the replay beside it.
        if (found := RUN_DIR.search(result.stdout)) and command == "super-bench run":
            user.runs["runs/<run>"] = user.runs["runs/<a>"] = found.group(1)
        elif found and "replay" in command:
            user.runs["runs/<b>"] = found.group(1)
    return user


def test_every_readme_command_is_checked_here() -> None:
    assert readme_commands() == [c for c in readme_commands() if c in CHECKS]
    assert set(CHECKS) == set(readme_commands())


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c, check in CHECKS.items() if check.how in ("run", "error")])
def test_readme_command(home: Home, command: str) -> None:
    check, result = CHECKS[command], home.results[command]
    if check.how == "error":
        assert result.returncode != 0 and re.search(check.error, result.stderr), result.stderr
        assert "Traceback" not in result.stderr
        return
    if check.ok:
        assert result.returncode == 0, result.stdout + result.stderr
    if check.shape is not None:
        check.shape(home, result)


@pytest.mark.slow
def test_readme_python_until_the_whole_run(home: Home) -> None:
    (block,) = readme_blocks("python")
    first = block.split("outcome = sb.run(")[0]
    result = subprocess.run([sys.executable, "-c", first], cwd=home.path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "Cloning into 'tinyreg'" in result.stdout and "output_match=1.0" in result.stdout, result.stdout


def bwrap_runs() -> bool:
    try:
        SANDBOXES.get("bwrap").check(SandboxConfig(backend="bwrap"))
    except SandboxError:
        return False
    return True


# -- every suggested command exists ---------------------------------------------------------------
def resolve(command: str, where: str = "") -> None:
    """Fail unless ``command`` (a ``super-bench`` command line) names existing subcommands and options,
    with values its choices and ranges accept."""
    words = command.split()[1:]
    command = f"{where}: {command}"
    context = click.Context(main)
    command_object: click.Command = main
    while isinstance(command_object, click.Group) and words and not words[0].startswith("-"):
        sub = command_object.get_command(context, words[0])
        assert sub is not None, f"{command}: no command {words[0]!r}"
        command_object, words = sub, words[1:]
    options = {opt: param for param in command_object.params for opt in (*param.opts, *param.secondary_opts)}
    while words:
        word = words.pop(0).strip("[]()|,")  # a synopsis brackets its optional parts
        if not word.startswith("--"):
            continue
        name, _, value = word.partition("=")
        param = options.get(name)
        assert isinstance(param, click.Option), f"{command}: {command_object.name} has no option {name}"
        if param.is_flag or param.count:
            continue
        value = (value or (words.pop(0) if words else "")).strip("[]()|,")
        placeholder = not value or value.startswith("<") or value.isupper()  # <run>, N, SET
        if isinstance(param.type, click.Choice | click.IntRange | click.FloatRange) and not placeholder:
            for alternative in value.split("|"):  # --mode corrected|reference
                param.type.convert(alternative, param, context)  # raises on a bad value


def suggestions_in_source() -> Iterator[tuple[str, str]]:
    """``(where, text)`` of every string in the package that a user sees (docstrings aside)."""
    for path in sorted((ROOT / "src" / "super_bench").rglob("*.py")):
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                parts = [v.value if isinstance(v, ast.Constant) else "X" for v in node.values]
                yield f"{path.name}:{node.lineno}", "".join(map(str, parts))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                yield f"{path.name}:{node.lineno}", node.value


def suggestions_in_docs() -> Iterator[tuple[str, str]]:
    for path in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            yield f"{path.name}:{lineno}", line


# A command runs to the end of its line, code span or quotation, or to a comment.
COMMAND = re.compile(r"super-bench ([^\n`\"';]*)")
EXTRA = re.compile(r"pip install '?super-bench\[([\w,]+)\]")
# The Hugging Face Hub's command line, under its current name and its old one.
HUB_COMMAND = re.compile(r"\b(hf|huggingface-cli) (download|upload) ([^\n`'\"]*)")


def test_every_suggested_command_exists() -> None:
    names = set(main.list_commands(click.Context(main)))
    extras = set(metadata("super-bench").get_all("Provides-Extra") or [])
    checked = set()
    for where, text in [*suggestions_in_source(), *suggestions_in_docs()]:
        for found in COMMAND.finditer(text):
            line = found.group(0).split(" # ")[0].split("  ")[0].strip()
            words = line.split()
            if len(words) > 1 and words[1] in names:  # not prose such as "the super-bench environment server"
                resolve(line, where)
                checked.add(words[1])
        for found in EXTRA.finditer(text):
            if found.group(1) != "X":  # an f-string's placeholder: the registries' extras are checked below
                assert set(found.group(1).split(",")) <= extras, f"{where}: no extra {found.group(1)}"
        for found in HUB_COMMAND.finditer(text):
            hub_command(*found.groups(), where)
    assert {"run", "score", "view", "sandbox", "serve", "play"} <= checked
    # The extras that a plug-in registry names when its dependency is missing.
    for registry in (SANDBOXES, AGENTS, MODELS, EXECUTORS):
        for name, entry in registry._entries.items():
            assert entry.extra is None or entry.extra in extras, f"{registry.kind} {name}: no extra {entry.extra}"


def hub_command(script: str, sub: str, rest: str, where: str) -> None:
    """A command line of the Hub's client exists in the installed huggingface_hub: its console script,
    the subcommand and each of its options."""
    installed = {e.name for e in entry_points(group="console_scripts")}
    assert script in installed, f"{where}: the installed huggingface_hub has no {script} command"
    help_text = hub_help(script, sub)
    assert f"Usage: {script} {sub}" in help_text, f"{where}: no command {script} {sub}"
    for option in re.findall(r"--[\w-]+", rest):
        assert option in help_text, f"{where}: {script} {sub} has no {option}"


@functools.cache
def hub_help(script: str, sub: str) -> str:
    executable = Path(sys.executable).parent / script
    command = [str(executable) if executable.exists() else script, sub, "--help"]
    return subprocess.run(command, capture_output=True, text=True, timeout=60).stdout


def test_the_offline_hub_hint_resolves() -> None:
    from super_bench.tasks.hub import _OFFLINE_HELP

    hint = _OFFLINE_HELP.format(repo="allenai/super")
    (download,) = HUB_COMMAND.findall(hint)
    assert download[0] == "hf"
    hub_command(*download, "the offline hint")
    # ... and in every version the hf extra allows: the hf command came with huggingface_hub 0.34.
    for line in requires("super-bench") or []:
        requirement = Requirement(line)
        if requirement.name == "huggingface-hub":
            assert not requirement.specifier.contains("0.33.2"), line
    source = re.search(r"run with (--source \S+)", hint)
    assert source is not None
    resolve(f"super-bench run {source.group(1)}")


def test_a_misspelt_command_or_option_does_not_resolve() -> None:
    for bad in ("super-bench sandbox biuld", "super-bench run --sets masked", "super-bench score x --mode paper"):
        with pytest.raises((AssertionError, click.BadParameter)):
            resolve(bad)
    resolve("super-bench score runs/x --mode reference")


# -- the papercuts of the first hour ----------------------------------------------------------------
def test_a_query_needs_an_agent_that_works_on_its_own(tmp_path: Path) -> None:
    result = Home(tmp_path).sh('super-bench run --query "Clone the repository and report its test MSE."')
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "gold solution" in result.stderr and "--agent" in result.stderr, result.stderr
    assert not (tmp_path / "runs").exists()  # nothing half-made
    # So with tasks that have no solution at all; one task with a solution is enough to run.
    no_solutions = tmp_path / "tasks.jsonl"
    no_solutions.write_text(json.dumps({"task_id": "a", "query": "q", "answer": 1}) + "\n")
    with pytest.raises(ConfigError, match=r"none of the 1 task\(s\) has one; .*--agent"):
        sb.run(source=str(no_solutions), out=tmp_path / "run")
    with pytest.raises(ConfigError, match="--query"):
        sb.run(query="Report the MSE.", out=tmp_path / "run")


def test_a_query_run_shows_the_answer_it_got(tmp_path: Path) -> None:
    answer = {"sum": 4, "note": "[red]not markup\u001b[2J"}
    actions = [{"type": "execute", "content": "print(2 + 2)"}, {"type": "submit", "content": answer}]
    (tmp_path / "actions.json").write_text(json.dumps(actions))
    result = Home(tmp_path).sh('super-bench run --query "What is 2 + 2?" --agent replay:actions.json')
    assert result.returncode == 0, result.stderr
    # The answer as JSON, its text as typed: no markup read, no escape sequence reaching the terminal.
    assert 'Answer: {"sum": 4, "note": "[red]not markup\\u001b[2J"}' in result.stdout, result.stdout
    assert "\x1b" not in result.stdout
    # From a folder of its own: in the same second, the same command would name the same run directory.
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "none.json").write_text(json.dumps(actions[:1]))
    result = Home(tmp_path / "other").sh('super-bench run --query "What is 2 + 2?" --agent replay:none.json')
    assert "No answer was submitted" in result.stdout, result.stdout


def test_run_directories_are_named_after_what_ran() -> None:
    def name(**settings: str) -> str:
        stamp, _, rest = RunConfig(**settings).default_out().name.partition("-")
        assert re.fullmatch(r"\d{8}", stamp)
        return rest.split("-", 1)[1]

    assert name() == "expert-gold"
    assert name(query="Report the MSE.", agent="react-super", model="openai/gpt-4o") == "query-react-super-gpt-4o"
    assert name(task_set="masked", agent="replay:/some/where/actions.json") == "masked-replay"
    assert name(agent="reflexion:swe-agent", model="anthropic/claude-x") == "expert-reflexion-swe-agent-claude-x"
    assert name(source="mine.jsonl", model="openai/../../etc") == "tasks-gold-etc"  # one path component
    assert name(model="local/my model:7b") == "expert-gold-my_model_7b"


def test_a_clone_holds_no_stray_file_at_its_root() -> None:
    # What a newcomer sees first: only the project's own files (a test or a command that wrote into the
    # checkout, an empty `oom` say, would show here once committed).
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: the files at the root are not listed")
    top = {name.split("/")[0] for name in listed.stdout.splitlines()}
    assert top <= {".ci", ".gitignore", "README.md", "benchmarks", "demo", "docs", "pyproject.toml", "src", "tests"}


def test_skip_reasons_name_no_path_of_a_machine() -> None:
    # A reason printed by `pytest -rs` must mean the same on every machine: no place of this checkout,
    # its neighbours or this user's home.
    here = re.compile("|".join(re.escape(str(p)) for p in (ROOT.parent, Path.home(), REFERENCE_TRAJECTORIES)))
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for name, item in vars(module).items():
            for mark in getattr(item, "pytestmark", []):
                if mark.name == "skipif":
                    reason = str(mark.kwargs.get("reason", ""))
                    assert not here.search(reason), f"{path.name}::{name}: {reason}"
