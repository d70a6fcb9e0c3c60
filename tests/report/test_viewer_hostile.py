"""The viewer against hostile agent text (docs/threat-model.md, "The viewer"): a real run whose agent writes HTML,
scripts, ``javascript:`` links and event handlers in its thoughts, actions, outputs and answer, prints a huge
output and lies in a run folder whose name is HTML too; the page, opened in a real headless Chromium, runs
none of it, links nowhere, loads nothing, and shows the text as it was written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.report.test_viewer import Page, browser  # noqa: F401 (the module's browser fixture)

from super_bench import EnvConfig, RunConfig, SandboxConfig, run
from super_bench.report.viewer import build_view

# Each payload, were it obeyed, sets window.pwned to a number of its own; the page starts with it at 0.
SCRIPT = "<script>window.pwned=1</script>"
IMG = '<img src=x onerror="window.pwned=2">'
LINK = '<a href="javascript:window.pwned=3">click me</a>'
CLOSE = "</script><script>window.pwned=4</script><!--"
SVG = '<svg onload="window.pwned=5"></svg>'
HUGE = 20_000_000  # characters of output in one cell, before the hostile tail

ACTIONS = [
    {
        "thought": f"{SCRIPT} {IMG} {LINK} {CLOSE}",
        "action": {
            "type": "execute",
            "content": f"# {CLOSE}\nprint({SCRIPT!r}, {IMG!r})\nprint({LINK!r})\nprint({SVG!r})",
        },
    },
    {
        "thought": "a display of HTML and of SVG",
        "action": {
            "type": "execute",
            "content": "from IPython.display import HTML, display\n"
            f"display(HTML({SCRIPT!r}))\ndisplay(HTML({LINK!r}))\n"
            "display({'image/svg+xml': " + repr(SVG) + ", 'text/plain': 'svg'}, raw=True)",
        },
    },
    {"action": {"type": "execute", "content": f"print('A' * {HUGE}, end='')\nprint({CLOSE!r})"}},
    {"thought": LINK, "action": {"type": "submit", "content": {SCRIPT: IMG, "javascript:window.pwned=6": CLOSE}}},
]


@pytest.fixture(scope="module")
def hostile_view(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile-viewer")
    actions = root / "actions.json"
    actions.write_text(json.dumps(ACTIONS))
    out = root / '<img src=x onerror="window.pwned=7">'  # the run's name is shown in the page
    env = EnvConfig(cell_timeout=120, sandbox=SandboxConfig(backend="local", root=root / "sandboxes"))
    config = RunConfig(query="Break the viewer.", agent=f"replay:{actions}", out=out, env=env)
    run(config, progress=False)
    return build_view(out, root / "view.html")


# Every element's attributes: event handlers, links and sources are what a script or a navigation would need.
ATTRIBUTES = """() => [...document.querySelectorAll('*')].flatMap(
    (node) => [...node.attributes].map((a) => [node.tagName.toLowerCase(), a.name, a.value]))"""


def _inert(page: Any) -> None:
    """Nothing the agent wrote became a script, a handler, a link or a frame in the page as it is now."""
    assert page.evaluate("window.pwned") == 0
    for tag, name, value in page.evaluate(ATTRIBUTES):
        assert not name.startswith("on"), (tag, name, value)
        if name == "href":
            assert value == "#", (tag, value)
        if name == "src":
            assert tag == "img" and value.startswith(("data:image/png;", "data:image/jpeg;")), (tag, value[:80])
    kinds = page.evaluate("() => [...document.scripts].map((s) => s.type)")
    assert kinds.count("") == 1, kinds  # the viewer's own code, and only data besides it
    assert set(kinds) <= {"", "application/json", "application/gzip+base64"}, kinds
    assert page.locator("iframe, object, embed, svg, form, base, meta[http-equiv=refresh]").count() == 0


@pytest.mark.slow
def test_agent_text_in_the_viewer_is_shown_never_run(browser: Any, hostile_view: Path) -> None:  # noqa: F811
    view = Page(browser, hostile_view)
    page = view.page
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.add_init_script("window.pwned = 0")
    page.reload()
    page.wait_for_selector("#tasks tbody tr")
    assert '<img src=x onerror="window.pwned=7">' in page.locator("header").inner_text()  # the run's name, as text
    _inert(page)

    page.click("#tasks tbody tr")
    page.wait_for_selector("#task-view .step")
    for details in page.locator("#task-view details").all():
        details.evaluate("node => { node.open = true; }")  # the raw outputs too
    shown = page.locator("#task-view").inner_text()
    for text in (SCRIPT, IMG, LINK, SVG, "javascript:window.pwned=6"):
        assert text in shown, text  # shown as written, not read as HTML
    assert "characters not shown" in shown  # the huge output cut to its head and tail
    _inert(page)
    assert dialogs == [] and view.errors == []
    assert set(view.requests) == {view.url}  # nothing loaded but the file itself (loaded twice: the reload)
    page.close()


def test_a_huge_output_leaves_a_small_page(hostile_view: Path) -> None:
    # 20 million characters of output in one cell: the page keeps a head and a tail of it.
    assert hostile_view.stat().st_size < 2_000_000


def test_the_viewers_script_has_no_way_to_turn_text_into_markup_or_code() -> None:
    script = (Path(build_view.__code__.co_filename).parent / "static" / "viewer.js").read_text(encoding="utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "srcdoc"):
        assert sink not in script, sink
