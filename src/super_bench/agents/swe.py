"""A SWE-agent-style agent: a file viewer with a 100-line window, search, and line-range edits
checked for syntax, inside the notebook.

Each reply is a thought followed by one command in a fenced block. The file commands become
cells built from ``swe_tools`` (so they work in any sandbox); anything else is run as a
notebook cell. The agent remembers the open file and the window's first line, as SWE-agent's
shell does, and shows them after each observation.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from super_bench.actions import Action
from super_bench.agents.base import AgentOptions
from super_bench.agents.llm import FormatError, LLMAgent, LLMSettings, Parsed
from super_bench.agents.react import NO_CONTENT, duration
from super_bench.agents.swe_tools import (
    swe_create,
    swe_edit,
    swe_find_file,
    swe_search_dir,
    swe_search_file,
    swe_show,
    tool_cell,
)
from super_bench.models import ChatModel, Message

if TYPE_CHECKING:
    from super_bench.environment import AgentEnv
    from super_bench.trajectory import Step

_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_HEADER = re.compile(r"^\[File: (.+) \((\d+) lines total\)\]$", re.MULTILINE)
_FIRST_LINE = re.compile(r"^(\d+):", re.MULTILINE)
_EDIT = re.compile(r"^edit[ \t]+(\d+)[ \t]*:[ \t]*(\d+)[ \t]*\n(.*?)\n?^end_of_edit[ \t]*$", re.MULTILINE | re.DOTALL)

COMMANDS = """\
open <path> [<line>]       open a file and show the 100 lines around <line> (from the top by default)
goto <line>                show the open file around <line>
scroll_down / scroll_up    move the window of the open file down or up by almost a full window
search_file <text> [<path>]  list the lines of a file (default: the open one) that contain <text>
search_dir <text> [<dir>]  list the files under a directory (default: the current one) that contain <text>
find_file <name> [<dir>]   list the files under a directory whose name matches <name> (wildcards allowed)
create <path>              create an empty file and open it
edit <start>:<end>         replace lines <start> to <end> of the open file (both included) with the lines
<new lines>                that follow, up to a line end_of_edit. Write the new lines with their full
end_of_edit                indentation. An edit that would break the syntax of a Python file is refused.
submit <json>              finish with your answer in JSON, e.g. submit {"accuracy": 0.81}; submit null if none
continue_wait / interrupt  wait for, or stop, a cell that is still running
Anything else is run as a notebook cell: Python code, shell commands after !, and magics such as %cd."""

EXAMPLE = """\
Example. Query: Fix the crash of evaluate.py in https://github.com/acme-nlp/tinysent and report its accuracy.
I begin by cloning the repository.
```
!git clone https://github.com/acme-nlp/tinysent
```
Then I move into it and read the README.
```
%cd tinysent
!cat README.md
```
I look for where evaluate.py computes the accuracy.
```
search_file accuracy evaluate.py
```
Line 41 divides by the wrong count; I open the file there.
```
open evaluate.py 41
```
I replace line 41 with the corrected computation.
```
edit 41:41
    accuracy = correct / len(labels)
end_of_edit
```
Now I run the evaluation.
```
!python evaluate.py
```
The script printed accuracy 0.8125, which I submit.
```
submit {"accuracy": 0.8125}
```"""


class SWESettings(LLMSettings):
    window: int = Field(100, ge=10, description="Lines shown by open, goto and the scroll commands")


class SWEAgent(LLMAgent):
    name = "swe-agent"
    settings_model: ClassVar[type[LLMSettings]] = SWESettings

    def __init__(self, arg: str | None = None, options: AgentOptions | None = None, *, model: ChatModel | None = None):
        super().__init__(arg, options, model=model)
        self.open_file: str | None = None
        self.first_line = 1

    def system_prompt(self, env: AgentEnv) -> str:
        timeout = duration(env.config.cell_timeout)
        return "\n\n".join(
            [
                "You are working in a Jupyter notebook to carry out a task. In each reply, first think about where "
                "things stand, then give exactly one command in a fenced block (```). You are then shown what it "
                "printed, followed by the open file and the current directory.",
                f"Commands:\n{COMMANDS}",
                "Tips:\n- When the task names a GitHub repository, clone it first, then read its README and look "
                "through the repository to learn how to install and run it.\n- Install packages with pip, not "
                f"conda.\n- A cell gets {timeout} to run; if it is still running then, you see its output so far "
                "and choose: interrupt (when it waits for input, such as a [y/N] prompt, which you can answer by "
                "piping, e.g. `echo y | command`; or when it runs the wrong thing) or continue_wait (when it is "
                "doing the right thing and progressing).\n- Edit files with edit, and look at the result.",
                EXAMPLE,
            ]
        )

    def messages(self, env: AgentEnv) -> list[Message]:
        messages = super().messages(env)
        if env.trajectory.steps:
            state = f"(Open file: {self.open_file or 'none'})\n(Current directory: {env.cwd})"
            messages[-1] = {"role": "user", "content": messages[-1]["content"] + "\n" + state}
        return messages

    def render_action(self, step: Step) -> str:
        command = step.metadata.get("command")
        if command is None:
            if step.action.type == "submit":
                command = f"submit {json.dumps(step.action.content)}"
            else:
                command = step.action.type if step.action.type in NO_CONTENT else str(step.action.content)
        thought = step.thought or ("[run before the task started]" if step.pre_executed else "")
        return f"{thought}\n```\n{command}\n```"

    def render_observation(self, step: Step, text: str) -> str:
        return text if text.strip() else "(no output)"

    def format_help(self, error: FormatError) -> str:
        return (
            f"Your reply could not be used: {error}. Think first, then give exactly one command in a fenced "
            "block:\n```\ncommand\n```"
        )

    # -- commands ------------------------------------------------------------------------------
    def parse(self, reply: str, env: AgentEnv) -> Parsed:
        match = _FENCE.search(reply)
        if match is None:
            raise FormatError("it has no command in a fenced block (```)")
        command = match.group(1).strip("\n")
        if not command.strip():
            raise FormatError("the fenced block is empty")
        thought = reply[: match.start()].strip()
        action, after = self._action(command, env)
        return Parsed(thought, action, {"command": command}, after)

    def _path(self, env: AgentEnv, path: str) -> str:
        return posixpath.normpath(posixpath.join(env.cwd, path))

    def _track(self, step: Step) -> None:
        """Remember the file and the window that a tool showed."""
        header = _HEADER.search(step.observation)
        if header is None:
            return
        self.open_file = header.group(1)
        first = _FIRST_LINE.search(step.observation, header.end())
        self.first_line = int(first.group(1)) if first else 1

    def _action(self, command: str, env: AgentEnv) -> tuple[Action, Callable[[Step], None] | None]:
        head, _, _ = command.partition("\n")
        word, _, rest = head.strip().partition(" ")
        label = f"swe-agent: {head.strip()}"
        window = self.settings.window
        if word in NO_CONTENT and not rest.strip():
            return Action.coerce({"type": word}), None
        if word == "submit":
            answer = command.strip()[len("submit") :].strip()
            try:
                return Action.submit(json.loads(answer)), None
            except json.JSONDecodeError as e:
                raise FormatError(f"the submitted answer is not valid JSON ({e.msg}): {answer[:200]!r}") from e
            except (RecursionError, ValueError):
                return Action.submit(answer), None  # too deep, or a number too long, to read: the environment says
        if word == "edit":
            match = _EDIT.match(command.strip("\n") + "\n")
            if match is None:
                raise FormatError("an edit is `edit START:END` on its own line, then the new lines, then `end_of_edit`")
            if self.open_file is None:
                return _note(label, "Error: no file is open; open one before editing it."), None
            start, end, text = int(match.group(1)), int(match.group(2)), match.group(3)
            cell = tool_cell(label, swe_edit, self.open_file, start, end, text, window, helpers=(swe_show,))
            return Action.execute(cell), self._track
        if word not in _TOOLS:
            return Action.execute(command), None
        try:
            args = shlex.split(rest)
        except ValueError as e:
            raise FormatError(f"cannot split the arguments of {word} ({e}); check the quotes") from e
        return self._tool(word, args, label, env), self._track

    def _tool(self, word: str, args: list[str], label: str, env: AgentEnv) -> Action:
        window = self.settings.window
        usage = _TOOLS[word]
        if not (usage[0] <= len(args) <= usage[1]):
            return _note(label, f"Usage: {usage[2]}")
        if word in ("open", "create"):
            path = self._path(env, args[0])
            if word == "create":
                return Action.execute(tool_cell(label, swe_create, path, window, helpers=(swe_show,)))
            if len(args) == 2 and not args[1].isdigit():
                return _note(label, f"Usage: {usage[2]}")
            first = max(1, int(args[1]) - window // 2) if len(args) == 2 else 1
            return Action.execute(tool_cell(label, swe_show, path, first, window))
        if word == "search_dir":
            return Action.execute(tool_cell(label, swe_search_dir, args[0], args[1] if len(args) > 1 else "."))
        if word == "find_file":
            return Action.execute(tool_cell(label, swe_find_file, args[0], args[1] if len(args) > 1 else "."))
        if word == "search_file" and len(args) == 2:
            return Action.execute(tool_cell(label, swe_search_file, args[0], self._path(env, args[1])))
        if self.open_file is None:
            return _note(label, f"Error: no file is open; open one first (usage: {usage[2]}).")
        if word == "search_file":
            return Action.execute(tool_cell(label, swe_search_file, args[0], self.open_file))
        if word == "goto":
            if not args[0].isdigit():
                return _note(label, f"Usage: {usage[2]}")
            first = max(1, int(args[0]) - window // 2)
        else:
            step = window - 2 if word == "scroll_down" else -(window - 2)
            first = max(1, self.first_line + step)
        return Action.execute(tool_cell(label, swe_show, self.open_file, first, window))


# command: (fewest arguments, most arguments, usage)
_TOOLS = {
    "open": (1, 2, "open <path> [<line>]"),
    "create": (1, 1, "create <path>"),
    "goto": (1, 1, "goto <line>"),
    "scroll_down": (0, 0, "scroll_down"),
    "scroll_up": (0, 0, "scroll_up"),
    "search_file": (1, 2, "search_file <text> [<path>]"),
    "search_dir": (1, 2, "search_dir <text> [<dir>]"),
    "find_file": (1, 2, "find_file <name> [<dir>]"),
}


def _note(label: str, message: str) -> Action:
    """A cell that only prints a message: how a misused tool answers, as in a shell."""
    return Action.execute(f"# {label}\nprint({message!r})")
