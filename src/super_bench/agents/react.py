"""ReAct and ReAct-SUPER: a thought, then one action (execute, edit, submit, or a reaction to a
timeout) with its content between ``<content>`` tags. ReAct-SUPER adds the edit action.

The settings and the prompt's content follow the paper's agents: temperature 0.2, top_p 0.5,
1500 response tokens, three format retries, and tips about cloning the repository and reading
its README, pip over conda, and what to do when a cell outlives its timeout.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, ClassVar

from super_bench.actions import Action
from super_bench.agents.llm import FormatError, LLMAgent, Parsed
from super_bench.environment.edit import AFTER, BEFORE

if TYPE_CHECKING:
    from super_bench.environment import AgentEnv
    from super_bench.trajectory import Step

_ACTION_LINE = re.compile(r"^[ \t]*\**Action\**:[ \t]*\**([A-Za-z_]+)\**[ \t]*(.*)$", re.MULTILINE)
_THOUGHT = re.compile(r"^[ \t]*\**Thought\**:", re.MULTILINE)
NO_CONTENT = ("interrupt", "continue_wait")

_EXECUTE = (
    "- execute: run the content as a notebook cell. A cell may hold Python code, shell commands (lines "
    "starting with !) and IPython magics (lines starting with %, such as %cd)."
)
_EDIT = (
    "- edit: replace lines of an existing file. The content is the file's path on the first line, then a line "
    f"{BEFORE}, then the lines to replace, copied exactly as they are in the file (indentation included), then "
    f"a line {AFTER}, then the lines to put in their place. The lines to replace must occur exactly once in the file."
)
_REST = """- submit: finish with your answer as the content, in JSON (keys and strings in double quotes). \
Submit null if there is no answer to give.
- continue_wait: keep waiting for a cell that is still running (no content).
- interrupt: stop a cell that is still running (no content)."""

_FORMAT = """Thought: <your reasoning about what you see and what to do next>
Action: <{actions}>
<content>
<the cell, the edit or the answer>
</content>"""

_TIPS = """Tips:
- When the task names a GitHub repository, begin by cloning it. Then read its README and look through the \
repository to find out how to install and run it.
- Manage packages with pip; do not use conda.
- A cell gets {timeout} to run. If it is still running after that, you see what it has printed so far and \
decide: interrupt it, or continue_wait. Interrupt when the cell waits for input (a prompt such as \
"Continue? [y/N]"; run the command again with the answer piped in, as in `echo y | command`), or when it is \
doing the wrong thing, such as training another model or for more epochs than asked. Keep waiting when it \
is doing what you want and making progress."""

_EXAMPLES = """Examples of how a task can go:

Query: Train the baseline model of https://github.com/acme-nlp/tinysent on its sample data and report the \
test accuracy as {"accuracy": 0.0}.
Thought: I start by cloning the repository.
Action: execute
<content>
!git clone https://github.com/acme-nlp/tinysent
</content>
Observation: ```
Cloning into 'tinysent'...
```
Thought: Now I move into the repository and read the README to see how it is installed and run.
Action: execute
<content>
%cd tinysent
!cat README.md
</content>
Observation: ```
/content/tinysent
# TinySent
Install with `pip install -r requirements.txt`. Train and evaluate: `python run.py --data sample`. ...
```
Thought: The README says to install the requirements first.
Action: execute
<content>
!pip install -r requirements.txt
</content>
Observation: ```
... Successfully installed scikit-learn-1.5.2
```
Thought: The requirements are installed, so I train and evaluate as the README shows.
Action: execute
<content>
!python run.py --data sample
</content>
Observation: ```
training on 200 examples ... done
test accuracy: 0.7350
```
Thought: The run reports a test accuracy of 0.7350, which is what the task asks for.
Action: submit
<content>
{"accuracy": 0.735}
</content>

Query: Read results.csv with pandas and report the mean of its f1 column.
Thought: I load the file and print the mean of the column.
Action: execute
<content>
import pandas as pd
print(pd.read_csv("results.csv")["f1"].mean())
</content>
Observation: ```
0.612
```
Thought: The mean F1 is 0.612.
Action: submit
<content>
{"f1": 0.612}
</content>"""

_EDIT_EXAMPLE = f"""Query: In train.yaml, change the number of epochs from 10 to 1.
Thought: I look at the file to see the exact lines.
Action: execute
<content>
!cat train.yaml
</content>
Observation: ```
model: bert-base-uncased
epochs: 10
batch_size: 16
```
Thought: I replace the epochs line.
Action: edit
<content>
train.yaml
{BEFORE}
epochs: 10
{AFTER}
epochs: 1
</content>
Observation: ```
Edit applied to train.yaml: lines 2-2 replaced by 1 line(s).
```
Thought: The file now sets one epoch; there is no value to report.
Action: submit
<content>
null
</content>"""


def duration(seconds: float) -> str:
    """``300`` -> ``5 minutes``, ``1`` -> ``1 second``."""
    value, unit = (seconds / 60, "minute") if seconds >= 60 else (seconds, "second")
    return f"{value:g} {unit}{'' if value == 1 else 's'}"


class ReActAgent(LLMAgent):
    name = "react"
    allow_edit: ClassVar[bool] = False
    stop_sequences: ClassVar[list[str]] = ["</content>", "Observation:"]

    @property
    def action_types(self) -> tuple[str, ...]:
        return ("execute", "edit", "submit", *NO_CONTENT) if self.allow_edit else ("execute", "submit", *NO_CONTENT)

    def system_prompt(self, env: AgentEnv) -> str:
        actions = "\n".join([_EXECUTE, *([_EDIT] if self.allow_edit else []), _REST])
        parts = [
            "You are working in a Jupyter notebook to carry out a task. Each of your replies holds exactly one "
            "thought and one action: the thought reasons about where things stand, the action is what you do next. "
            "After each action you are shown its result, the observation.",
            f"The actions are:\n{actions}",
            "Write every reply in exactly this form, with the content between <content> and </content>:\n"
            + _FORMAT.format(actions=", ".join(self.action_types)),
            _TIPS.format(timeout=duration(env.config.cell_timeout)),
            _EXAMPLES,
        ]
        if self.allow_edit:
            parts.append(_EDIT_EXAMPLE)
        return "\n\n".join(parts)

    def parse(self, reply: str, env: AgentEnv) -> Parsed:
        match = _ACTION_LINE.search(reply)
        if match is None:
            raise FormatError("there is no line starting with 'Action:'")
        before = reply[: match.start()]
        thought = _THOUGHT.search(before)
        if thought is None:
            raise FormatError("there is no 'Thought:' before the action")
        kind = match.group(1).lower()
        if kind not in self.action_types:
            raise FormatError(f"{kind!r} is not an action; the actions are {', '.join(self.action_types)}")
        content = _content(match.group(2) + reply[match.end() :])
        if kind in NO_CONTENT:
            return Parsed(before[thought.end() :].strip(), Action.coerce({"type": kind}))
        if not content.strip() and kind != "submit":
            raise FormatError(f"the {kind} action has no content")
        value: object = content
        if kind == "submit":
            try:
                value = json.loads(content)
            except json.JSONDecodeError as e:
                raise FormatError(f"the submitted answer is not valid JSON ({e.msg}): {content[:200]!r}") from e
            except (RecursionError, ValueError):
                value = content  # too deep, or a number too long, to read here: the environment says which
        return Parsed(before[thought.end() :].strip(), Action.coerce({"type": kind, "content": value}))

    def render_action(self, step: Step) -> str:
        action = step.action
        thought = step.thought or ("[run before the task started]" if step.pre_executed else "")
        if action.type in NO_CONTENT:
            return f"Thought: {thought}\nAction: {action.type}"
        content = action.content if isinstance(action.content, str) else json.dumps(action.content)
        return f"Thought: {thought}\nAction: {action.type}\n<content>\n{content}\n</content>"

    def format_help(self, error: FormatError) -> str:
        return (
            f"Your reply could not be read: {error}. Reply with one thought and one action, in exactly this form:\n"
            + _FORMAT.format(actions=", ".join(self.action_types))
            + "\nA submission must be valid JSON."
        )


class ReActSuperAgent(ReActAgent):
    name = "react-super"
    allow_edit = True


def _content(text: str) -> str:
    """What stands between <content> and </content> (the closing tag may have been cut as a stop
    sequence); without tags, the text after the action line."""
    start = text.find("<content>")
    if start >= 0:
        text = text[start + len("<content>") :]
    end = text.find("</content>")
    if end >= 0:
        text = text[:end]
    return text.lstrip(" \t").removeprefix("\n").rstrip()
