"""The static HTML viewer: what it embeds, that it loads nothing from the network, and the page itself
driven in a real headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

import pytest
from tests.support.helpers import REFERENCE_TRAJECTORIES, cli, payloads, step, trajectory
from tests.support.trajectory_notebooks import (
    EPOCH_LINE,
    EXPERT_QUERY,
    MASKED_ID,
    react_expert_steps,
    react_masked_steps,
    write_gold_tasks,
    write_notebook,
)

from super_bench import EnvConfig, RunConfig, SandboxConfig, load_tasks, run
from super_bench.actions import Action
from super_bench.report.viewer import build_view
from super_bench.runner.importer import import_trajectories
from super_bench.runner.results import TaskResult
from super_bench.runner.rundir import RunDir
from super_bench.runner.verify_records import VerifyResult
from super_bench.scoring import score_trajectory
from super_bench.tasks.model import Task
from super_bench.trajectory import Step

N_EXTRA = 30  # more tasks, so that sorting and filtering have something to do


def published_run(root: Path) -> Path:
    """A ReAct-SUPER run folder with an Expert task, a Masked task and many small ones."""
    source = root / "synthetic_react-super_expert"
    write_notebook(
        source / "tinyrepo" / "history.ipynb",
        "react-super",
        EXPERT_QUERY,
        react_expert_steps(),
        {"submitted": 1, "output_match": 0.5, "checkpoints": 1.0, "entrypoint": 0.0},
    )
    write_notebook(
        source / MASKED_ID / "history.ipynb",
        "react-super",
        EXPERT_QUERY,
        react_masked_steps(),
        {"submitted": 0, "output_match": 0.0, "checkpoints": 1.0, "entrypoint": 0.0},
    )
    for i in range(N_EXTRA):
        steps = react_expert_steps()[: 1 + i % 5]
        write_notebook(
            source / f"task-{i:02d}" / "history.ipynb",
            "react-super",
            f"Task {i}",
            steps,
            {"submitted": 0, "output_match": 0.0, "checkpoints": (i % 4) / 4, "entrypoint": 0.0},
        )
    return source


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("viewer")
    gold = load_tasks(write_gold_tasks(root / "gold.jsonl"))
    out = root / "run"
    import_trajectories(published_run(root), out, tasks=gold)
    return out


def by_id(html: str) -> dict[str, Any]:
    return {task["id"]: task for task in payloads(html).values()}


def test_view_embeds_each_task_compactly_with_landmarks_findable(imported: Path, tmp_path: Path) -> None:
    path = build_view(imported, tmp_path / "view.html")
    html = path.read_text(encoding="utf-8")
    tasks = by_id(html)
    assert len(tasks) == N_EXTRA + 2
    task = tasks["tinyrepo"]
    assert task["gold"] == {"test_mse": 7.4031, "epochs": 1}
    assert task["answer"] == [["test_mse", "7.4031", "7.4031", "match"], ["epochs", "1", "2", "differs"]]
    assert [lm[1] for lm in task["landmarks"]] == [3, 4]
    long_step = task["steps"][3]
    obs = long_step["obs"]
    assert obs["n"] > 60_000 and sum(len(text) for _, text in obs["p"]) < 12_000  # capped ...
    ((start, end, landmark),) = obs["m"]
    part = next(text for offset, text in obs["p"] if offset <= start and end <= offset + len(text))
    offset = next(offset for offset, text in obs["p"] if text == part)
    assert part[start - offset : end - offset] == "Epoch 1/1: loss" and landmark == 0  # ... but the match is kept
    assert long_step["lm"] == [0] and long_step["outcome"] == "timeout"
    first = task["steps"][0]
    assert "\x1b" not in "".join(t for _, t in first["obs"]["p"])  # ANSI codes are not shown
    assert task["steps"][2]["label"] == "" and task["steps"][2]["outcome"] == "invalid"
    masked = tasks[MASKED_ID]
    assert [s["pre"] for s in masked["steps"]] == [True, True, False, False, False]
    page = json.loads(re.search(r'<script type="application/json" id="run-data">(.*?)</script>', html, re.S).group(1))
    assert len(page["rows"]) == N_EXTRA + 2 and page["run"]["has_gold"] is True
    metrics = {m["name"]: m for m in page["metrics"]}
    assert metrics["landmarks"]["n"] == N_EXTRA + 2 and metrics["landmarks"]["low"] <= metrics["landmarks"]["mean"]
    assert metrics["entrypoint"]["n"] == N_EXTRA  # tasks without gold keep every recorded metric, entrypoint too
    assert page["run"]["mode"] == "mixed"  # re-scored rows beside recorded ones


class _Resources(HTMLParser):
    """Everything in a page that a browser could fetch."""

    URL_ATTRIBUTES: ClassVar[set[str]] = {
        "src",
        "href",
        "srcset",
        "action",
        "formaction",
        "poster",
        "data",
        "background",
        "ping",
        "manifest",
    }

    def __init__(self) -> None:
        super().__init__()
        self.references: list[str] = []
        self.tags: set[str] = set()
        self.csp: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        values = dict(attrs)
        for name, value in attrs:
            if name in self.URL_ATTRIBUTES and value is not None and not value.startswith("#"):
                self.references.append(f"<{tag} {name}={value!r}>")
        if tag == "meta" and (values.get("http-equiv") or "").lower() == "content-security-policy":
            self.csp = values.get("content")


def test_view_html_references_nothing_on_the_network(imported: Path, tmp_path: Path) -> None:
    html = build_view(imported, tmp_path / "view.html").read_text(encoding="utf-8")
    parser = _Resources()
    parser.feed(html)
    assert parser.references == []
    assert not parser.tags & {"link", "img", "iframe", "object", "embed", "base", "video", "audio", "source", "form"}
    assert parser.csp is not None and "default-src 'none'" in parser.csp and "connect-src" not in parser.csp
    style = re.search(r"<style>(.*?)</style>", html, re.S).group(1)
    assert "url(" not in style and "@import" not in style
    script = html[html.rindex("<script>") :]
    for api in (
        "fetch(",
        "XMLHttpRequest",
        "WebSocket",
        "EventSource",
        "sendBeacon",
        "import(",
        "importScripts",
        "http:",
        "https:",
    ):
        assert api not in script, api
    # The data mentions URLs (queries do), but only inside inert data blocks.
    outside = re.sub(r"<script type=\"application/(json|gzip\+base64)\"[^>]*>.*?</script>", "", html, flags=re.S)
    assert "https://" not in outside and "http://" not in outside


@pytest.mark.slow
def test_view_of_a_real_run_with_pre_executed_steps(tmp_path: Path) -> None:
    env = EnvConfig(cell_timeout=60, sandbox=SandboxConfig(root=tmp_path / "sandboxes"))
    run(RunConfig(env=env, task_set="masked", task_ids=["tinyreg_goal"], out=tmp_path / "run"))
    result = cli("view", str(tmp_path / "run"))
    assert result.returncode == 0, result.stdout + result.stderr
    html = (tmp_path / "run" / "view.html").read_text(encoding="utf-8")
    (task,) = by_id(html).values()
    assert task["steps"][0]["pre"] and not task["steps"][-1]["pre"]
    assert task["steps"][-1]["type"] == "submit"
    assert all(step is not None for _, step in task["landmarks"])
    assert any(step["lm"] for step in task["steps"])
    assert {row[3] for row in task["answer"]} == {"match"}


# -- in a real browser --------------------------------------------------------------------------------
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = _chromium()
    if executable is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's chromium for the viewer test (.ci/run does)")
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


class Page:
    """A page that records every request, console error and uncaught exception."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.url = path.resolve().as_uri()
        self.page = browser.new_page()
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("console", lambda message: message.type == "error" and self.errors.append(message.text))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.goto(self.url)

    def rows(self) -> list[str]:
        return list(self.page.locator("#tasks tbody tr").evaluate_all("rows => rows.map(r => r.dataset.task)"))


@pytest.mark.slow
def test_viewer_in_headless_chromium(browser: Any, imported: Path, tmp_path: Path) -> None:
    view = Page(browser, build_view(imported, tmp_path / "view.html"))
    page = view.page
    page.wait_for_selector("#tasks tbody tr")
    assert len(view.rows()) == N_EXTRA + 2
    assert "Run run" in page.locator("header").inner_text()
    assert "landmarks" in page.locator("#summary").inner_text()
    assert page.locator("#count").inner_text() == f"{N_EXTRA + 2} of {N_EXTRA + 2} tasks shown"

    # Filter by id, then by the solved filter, then clear.
    page.fill("#filters input[type=search]", "task-1")
    assert view.rows() == [f"task-{i}" for i in range(10, 20)]
    page.fill("#filters input[type=search]", "/^task-0[0-4]$/")
    assert view.rows() == [f"task-0{i}" for i in range(5)]
    page.fill("#filters input[type=search]", "")
    # Sort by landmarks: descending first, blanks last.
    page.click("#tasks th[data-col=landmarks]")
    assert page.get_attribute("#tasks th[data-col=landmarks]", "aria-sort") == "descending"
    values = page.locator("#tasks tbody tr td:nth-child(8)").all_inner_texts()
    assert values == sorted(values, reverse=True)
    page.click("#tasks th[data-col=landmarks]")
    values = page.locator("#tasks tbody tr td:nth-child(8)").all_inner_texts()
    assert values == sorted(values)

    # Open a task: its steps, the landmark highlighted inside a capped observation, the answer diff.
    page.click("#tasks tbody tr[data-task=tinyrepo]")
    page.wait_for_selector("#task-view .step")
    assert page.locator("#list-view").is_hidden()
    assert page.locator("#task-view .step").count() == len(react_expert_steps())
    assert page.locator("mark.lm").first.inner_text() == "Epoch 1/1: loss"
    assert EPOCH_LINE.startswith(page.locator("#step-3 mark.lm").inner_text())
    assert "characters not shown" in page.locator("#step-3 pre.text").nth(1).inner_text()
    assert page.locator("table.answer tr.differs td").first.inner_text() == "epochs"
    assert page.locator("table.answer tr.match td").first.inner_text() == "test_mse"
    assert "unparsable reply" in page.locator("#step-2").inner_text()

    # A Masked task by its link: pre-executed steps are marked.
    page.evaluate(f"location.hash = 'task=' + encodeURIComponent({json.dumps(MASKED_ID)})")
    page.wait_for_selector("#task-view .task-title:has-text('configuration')")
    assert page.locator("#task-view .step.pre").count() == 2
    assert page.locator("#task-view .badge.pre").count() == 2
    page.keyboard.press("Escape")
    page.wait_for_selector("#list-view", state="visible")

    assert view.errors == []
    assert view.requests == [view.url]  # nothing but the file itself
    page.close()


@pytest.mark.slow
@pytest.mark.skipif(not (REFERENCE_TRAJECTORIES / "react-super_expert").is_dir(), reason="no sample trajectories")
def test_viewer_opens_every_sample_task(browser: Any, tmp_path: Path) -> None:
    import_trajectories(REFERENCE_TRAJECTORIES / "react-super_expert", tmp_path / "run")
    view = Page(browser, build_view(tmp_path / "run"))
    page = view.page
    page.wait_for_selector("#tasks tbody tr")
    ids = view.rows()
    assert len(ids) == 45
    for task_id in ids:
        page.evaluate(f"location.hash = 'task=' + encodeURIComponent({json.dumps(task_id)})")
        page.wait_for_function(
            "id => document.querySelector('#task-view .task-title')?.textContent === id", arg=task_id
        )
    assert view.errors == [] and view.requests == [view.url]
    page.close()


@pytest.mark.slow
def test_a_large_table_lists_its_first_rows_until_asked(browser: Any, tmp_path: Path) -> None:
    results = [TaskResult(task_id=f"t{i:03d}", task_set="expert", status="completed") for i in range(260)]
    results.append(TaskResult(task_id="crashed", task_set="expert", status="infra_error", error="sandbox died"))
    run_dir = RunDir(tmp_path / "run")
    run_dir.create()
    run_dir.write_results(results)
    view = Page(browser, build_view(tmp_path / "run"))
    page = view.page
    page.wait_for_selector("#tasks tbody tr")
    assert len(view.rows()) == 250
    assert page.locator("#count").inner_text().startswith("261 of 261 tasks shown (the first 250 listed)")
    page.click("#count button")
    assert len(view.rows()) == 261
    page.select_option("#filters select[aria-label=status]", "infra_error")
    assert view.rows() == ["crashed"]
    page.click("#tasks tbody tr")
    page.wait_for_selector("#task-view .task-title")
    assert "sandbox died" in page.locator("#task-view").inner_text()
    assert "Trajectory (0 steps" in page.locator("#task-view").inner_text()
    assert view.errors == [] and view.requests == [view.url]
    page.close()


def test_view_shows_gold_given_on_the_command_line(tmp_path: Path) -> None:
    source = tmp_path / "synthetic_react-super_expert"
    write_notebook(source / "tinyrepo" / "history.ipynb", "react-super", EXPERT_QUERY, react_expert_steps())
    import_trajectories(source, tmp_path / "run")  # no gold: recorded metrics only
    without = by_id((build_view(tmp_path / "run")).read_text(encoding="utf-8"))["tinyrepo"]
    assert "gold" not in without and without["landmarks"] == []
    gold = write_gold_tasks(tmp_path / "gold.jsonl")
    result = cli("view", str(tmp_path / "run"), "--tasks", str(gold), "--out", str(tmp_path / "gold.html"))
    assert result.returncode == 0, result.stderr
    task = by_id((tmp_path / "gold.html").read_text(encoding="utf-8"))["tinyrepo"]
    assert task["gold"] == {"test_mse": 7.4031, "epochs": 1}
    assert [step for _, step in task["landmarks"]] == [3, 4] and task["steps"][3]["obs"]["m"]


FIGURES = [
    {"type": "execute", "content": "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()"},
    {"type": "execute", "content": "plt.plot([3, 2, 1])\nplt.show()\nplt.plot([2, 2, 2])\nplt.show()"},
]


@pytest.mark.slow
def test_figures_are_shown_in_the_page_within_a_budget_per_task(
    browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    actions = tmp_path / "actions.json"
    actions.write_text(json.dumps(FIGURES))
    # matplotlib is in SUPER's environment, not the minimal default: the task's base is this Python, which has it.
    sandbox = SandboxConfig(root=tmp_path / "sandboxes", task_python=Path(sys.executable))
    run(
        RunConfig(
            env=EnvConfig(cell_timeout=60, sandbox=sandbox),
            query="Plot it.",
            agent=f"replay:{actions}",
            out=tmp_path / "run",
        )
    )
    html = build_view(tmp_path / "run", tmp_path / "view.html").read_text(encoding="utf-8")
    (task,) = by_id(html).values()
    assert [len(step.get("figs", [])) for step in task["steps"]] == [1, 2]
    view = Page(browser, tmp_path / "view.html")
    page = view.page
    page.evaluate("location.hash = 'task=query'")
    page.wait_for_selector("#step-1 .figures img")
    sizes = page.locator(".figures img").evaluate_all("images => images.map(i => [i.complete, i.naturalWidth])")
    assert len(sizes) == 3 and all(done and width > 100 for done, width in sizes)  # decoded, not broken
    assert page.locator("#step-1 .part-label").last.inner_text() == "2 figures"
    assert view.errors == [] and view.requests == [view.url]
    page.close()

    # Beyond the budget, figures stay in the trajectory and the page says how many.
    from super_bench.report import viewer

    monkeypatch.setattr(viewer, "FIGURE_CHARS", len(task["steps"][0]["figs"][0][1]))
    (task,) = by_id(build_view(tmp_path / "run", tmp_path / "small.html").read_text(encoding="utf-8")).values()
    assert [len(step.get("figs", [])) for step in task["steps"]] == [1, 0]
    assert task["steps"][1]["figs_omitted"] == 2


@pytest.mark.slow
def test_the_viewer_shows_time_without_result_and_the_node(browser: Any, tmp_path: Path) -> None:
    actions = tmp_path / "actions.json"
    cells = [{"type": "execute", "content": "import time\ntime.sleep(3)"}, {"type": "interrupt"}, {"type": "submit"}]
    actions.write_text(json.dumps(cells))
    env = EnvConfig(cell_timeout=1, sandbox=SandboxConfig(backend="local", root=tmp_path / "sandboxes"))
    config = RunConfig(agent=f"replay:{actions}", task_ids=["tinyreg"], out=tmp_path / "run", env=env)
    run(config, progress=False)
    view = Page(browser, build_view(tmp_path / "run"))
    page = view.page
    page.wait_for_selector("#tasks tbody tr")
    assert re.search(r"time without result\s*interrupted cells \d", page.locator("#summary").inner_text())
    page.click("#tasks tbody tr[data-task=tinyreg]")
    page.wait_for_selector("#task-view .task-title")
    text = page.locator("#task-view").inner_text()
    assert f"ran on {socket.gethostname()}" in text and "Time without result: interrupted cells" in text
    assert view.errors == []
    page.close()


def test_viewer_shows_where_the_answer_came_from_and_its_reproduction(
    browser: Any, imported: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(imported, run_dir)
    # tinyrepo printed its test MSE in step 5 (a continue_wait) and never its epochs; one task was verified.
    checked = VerifyResult(task_id="tinyrepo", reproduced=False, reason="not shown by the replay's outputs: epochs = 2")
    (run_dir / "verify.jsonl").write_text(checked.model_dump_json() + "\n")
    view = Page(browser, build_view(run_dir, tmp_path / "view.html"))
    page = view.page
    page.wait_for_selector("#tasks tbody tr")
    assert "answer observed" in page.locator("#answer-observed").inner_text()
    assert "0 of 1" in page.locator("#reproduced").inner_text()
    answer = page.locator("#tasks tbody tr[data-task=tinyrepo] td:nth-child(11)").inner_text()
    assert answer == "partly observed"
    page.select_option("#filters select[aria-label=answer]", "partly observed")
    assert view.rows() == ["tinyrepo"]
    page.select_option("#filters select[aria-label=reproduced]", "no")
    assert view.rows() == ["tinyrepo"]

    page.click("#tasks tbody tr[data-task=tinyrepo]")
    page.wait_for_selector("#provenance li")
    provenance = page.locator("#provenance").inner_text()
    assert "test_mse = 7.4031 — shown in step 5 as 7.4031" in provenance
    assert "epochs = 2 — never shown by the agent's own output" in provenance
    assert "not reproduced" in page.locator("#reproduction").inner_text()
    assert page.locator("#step-4 .badge.ans").inner_text() == "answer: test_mse"
    page.click("#provenance a.step-link")
    mark = page.locator('#step-4 mark.ans[data-field="test_mse"]')
    assert mark.inner_text() == "7.4031" and mark.is_visible()
    assert view.errors == [] and view.requests == [view.url]
    page.close()


def _scored_run(tmp_path: Path, steps: list[Step], answer: Any, landmarks: list[str]) -> Path:
    """A run directory of one Masked-style task, scored as a run scores it."""
    run_dir = RunDir(tmp_path / "run")
    run_dir.create()
    traj = trajectory(*steps, submission=answer, submitted=True)
    path = traj.save(run_dir.task_dir("t"))
    task = Task(task_id="t", query="q", answer=answer, landmarks=landmarks)
    metrics, details = score_trajectory(traj, task)
    run_dir.write_tasks([task])
    row = TaskResult.from_trajectory(
        traj,
        "masked",
        metrics=metrics,
        details=details.model_dump(),
        answer_provenance=details.answer_provenance,
        mode="corrected",
        trajectory=str(path.relative_to(run_dir.path)),
    )
    run_dir.write_results([row])
    return run_dir.path


def _marks(entry: dict[str, Any]) -> list[tuple[str, Any]]:
    """What a step's shown output marks: ``(marked text, field or landmark number)``."""
    shown = entry.get("raw") or entry["obs"]
    text = "".join(t for _, t in shown["p"])
    first = shown["p"][0][0]
    return [(text[s - first : e - first], n) for s, e, n in shown["m"]]


def test_a_value_shown_only_by_a_given_cell_is_given_in_summary_closing_lines_and_viewer(tmp_path: Path) -> None:
    answer = {"acc": 0.8523}
    given = step(0, Action.execute("!python eval.py --given"), "loading\nacc 0.8523\n", pre=True)
    steps = [given, step(1, Action.execute("!ls"), "eval.py"), step(2, Action.submit(answer))]
    run_dir = _scored_run(tmp_path, steps, answer, [])
    assert json.loads((run_dir / "results.jsonl").read_text())["answer_provenance"] == "given"
    scored = cli("score", "--in-place", str(run_dir))
    assert scored.returncode == 0, scored.stderr
    assert "answers given (some values shown only by pre-executed cells): 1 of 1" in scored.stdout
    assert "answers shown by the run's own output: 0 of 1" in scored.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["answer_observed"], summary["answer_given"]) == (0.0, 1.0)

    html = build_view(run_dir).read_text(encoding="utf-8")
    assert '"answer_given":1.0' in html and '"given":"warn"' in html
    (task,) = by_id(html).values()
    (field,) = task["provenance"]["fields"]
    assert (field["step"], field["pre_executed_step"], field["text"]) == (None, 0, "0.8523")
    # The pointer: the given cell's print of the value is marked, and only there.
    assert [s["ans"] for s in task["steps"]] == [["acc"], [], []]
    assert _marks(task["steps"][0]) == [("0.8523", "acc")]


def test_the_pointer_lands_on_the_value_inside_a_landmark_that_covers_it(tmp_path: Path) -> None:
    answer = {"exact": 0.0}
    printed = "{'exact': 0.0, 'f1': 12.5}\n"
    steps = [step(0, Action.execute("!python run.py --learning_rate 3e-5"), printed), step(1, Action.submit(answer))]
    run_dir = _scored_run(tmp_path, steps, answer, [r"'exact': \d+\.\d+, 'f1'"])
    (task,) = by_id(build_view(run_dir).read_text(encoding="utf-8")).values()
    entry = task["steps"][0]
    assert entry["ans"] == ["exact"] and entry["lm"] == [0]
    # The landmark is marked around the value, the value itself as the answer's: the link finds its mark.
    assert sorted(_marks(entry), key=lambda m: printed.index(m[0])) == [
        ("'exact': ", 0),
        ("0.0", "exact"),
        (", 'f1'", 0),
    ]


def test_viewer_shows_each_failed_tasks_cause_with_its_evidence_step_and_a_replays_divergence(
    browser: Any, tmp_path: Path
) -> None:
    """A task stopped by a cell timeout (compute, whatever else the rules learn) beside a solved one: the cause
    is a badge and a filter, the task's view names it and links its step, which is marked with the quoted line;
    a replay's divergence is shown the same way."""
    from super_bench.divergence import Divergence

    run_dir = RunDir(tmp_path / "run")
    run_dir.create()
    answer = {"acc": 0.5}
    stuck = [
        step(0, Action.execute("!ls"), "train.py"),
        step(1, Action.execute("!python train.py"), "epoch 1\nstill training <b>x</b>", outcome="timeout"),
        step(2, Action.submit({"acc": 0.1})),
    ]
    solved = [step(0, Action.execute("!python eval.py"), "acc 0.5"), step(1, Action.submit(answer))]
    tasks, rows = [], []
    for task_id, steps in (("stuck", stuck), ("solved", solved)):
        traj = trajectory(*steps, submission=steps[-1].action.content, submitted=True)
        traj.task_id = task_id
        path = traj.save(run_dir.task_dir(task_id))
        task = Task(task_id=task_id, query="q", answer=answer)
        metrics, details = score_trajectory(traj, task)
        tasks.append(task)
        row = TaskResult.from_trajectory(
            traj,
            "expert",
            metrics=metrics,
            details=details.model_dump(),
            answer_provenance=details.answer_provenance,
            mode="corrected",
            trajectory=str(path.relative_to(run_dir.path)),
        ).diagnosed(traj)
        rows.append(row)
    rows[0].replay_divergence = Divergence(kind="environment", step=1, recorded="ok", replayed="timeout")
    run_dir.write_tasks(tasks)
    run_dir.write_results(rows)
    failure = rows[0].failure
    assert failure is not None and failure.cause == "compute" and failure.step == 1 and rows[1].failure is None

    view = Page(browser, build_view(run_dir.path, tmp_path / "view.html"))
    page = view.page
    page.wait_for_selector("#tasks tbody tr")
    assert page.locator("#tasks tbody tr[data-task=stuck] .badge", has_text="compute").count() == 1
    assert page.locator("#tasks tbody tr[data-task=solved]").inner_text().count("compute") == 0
    page.select_option("#filters select[aria-label='failure cause']", "compute")
    assert view.rows() == ["stuck"]
    page.select_option("#filters select[aria-label='failure cause']", "")
    page.select_option("#filters select[aria-label='replay divergence']", "environment")
    assert view.rows() == ["stuck"]

    page.click("#tasks tbody tr[data-task=stuck]")
    page.wait_for_selector("#failure")
    text = page.locator("#failure").inner_text()
    assert "compute" in text and f"step 2: {failure.quote}" in text and failure.quote, text
    page.click("#failure a.step-link")
    evidence = page.locator("#step-1.cause")
    assert evidence.locator(".badge.cause").inner_text() == "failure cause: compute"
    quote = evidence.locator("blockquote.cause-quote")
    assert quote.inner_text() == failure.quote and quote.is_visible()
    assert page.locator(".step.cause").count() == 1 and page.locator("#step-1 b").count() == 0  # text, not markup
    divergence = page.locator("#divergence").inner_text()
    assert "environment" in divergence and "first at step 2: recorded ok, replayed timeout" in divergence
    assert page.locator("#step-1.diverged .badge.diverged").inner_text() == "replay diverged: environment"

    page.goto(view.url + "#task=solved")
    page.wait_for_selector("#task-view .task-title")
    assert page.locator("#failure").count() == 0 and page.locator(".step.cause").count() == 0
    assert view.errors == [] and all(url.startswith(view.url) for url in view.requests)
    page.close()
