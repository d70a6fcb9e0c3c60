"""A script the agent wrote itself, run in place of the repository's: no experiment of the repository ran.

An agent that cannot get the repository's scripts to work sometimes writes a training script of its own
and runs that instead (``no_experiment``: it "ran its own substitute"). The errors the repository's
scripts met before it turned away are then not what stopped the experiment: the agent left them.
A script counts as the agent's own when the agent created it: SWE-agent's ``create``, a ReAct-SUPER
``edit`` of a file with nothing before, ``%%writefile``, a shell redirection (``> x.py``) or Python's
``open('x.py', 'w')``.
"""

from __future__ import annotations

import posixpath
import re

from super_bench.analysis._resolve import Run
from super_bench.reading import Deed, head

_WRITTEN = re.compile(
    r"\bopen\(\s*['\"](?P<python>[^'\"]+\.(?:py|sh))['\"]\s*,\s*['\"]w"
    r"|(?<![>0-9&])>\s*(?P<shell>[^\s;&|>'\"]+\.(?:py|sh))\b",
)
_NOTHING_BEFORE = re.compile(r"<<<BEFORE_EDIT>>>\s*<<<AFTER_EDIT>>>")
# What a substitute may still fail on and be blamed for as such (a dependency, a file, the hardware).
_OWN_CLASSES = ("environment", "resource", "compute")


def written_scripts(deeds: list[Deed]) -> set[str]:
    """The base names of the scripts (``.py``, ``.sh``) the agent created itself."""
    found: set[str] = set()
    for deed in deeds:
        if deed.step.pre_executed:
            continue
        code = deed.step.action.content if isinstance(deed.step.action.content, str) else ""
        new = deed.command in ("create", "writefile") or _NOTHING_BEFORE.search(code[:2000]) is not None
        if deed.kind == "edit" and deed.applied and deed.path and new:
            found.add(posixpath.basename(deed.path.strip()))
        if deed.kind in ("run", "shell", "install"):
            for match in _WRITTEN.finditer(head(code)):
                found.add(posixpath.basename(match.group("python") or match.group("shell")))
    return {name for name in found if name.endswith((".py", ".sh"))}


def substitute(deeds: list[Deed], attempts: list[Run]) -> Run | None:
    """The last run of a named script, where that script is one the agent wrote and the run did not fail on a
    dependency, a file or the hardware: what the episode ended on was the agent's own script."""
    named = [r for r in attempts if any(n.endswith((".py", ".sh")) for n in r.identity)]
    if not named:
        return None
    last = named[-1]
    if not last.identity & written_scripts(deeds):
        return None
    final = last.final
    return None if final is not None and final.kind in _OWN_CLASSES else last
