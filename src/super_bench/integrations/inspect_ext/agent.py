"""The default solver of the super_bench tasks: Inspect's ReAct agent with the notebook tools.

It ends when the agent submits an answer the environment accepts (a submission that is not JSON
is refused and the agent goes on), when the environment's budget (steps, execution time) runs out,
or, as in SUPER, when the model answers three times in a row without using a tool (``format_error``).
"""

from __future__ import annotations

from inspect_ai.agent import Agent, AgentPrompt, AgentState, AgentSubmit, agent, react
from inspect_ai.util import store

from super_bench.integrations.inspect_ext.notebook import current_notebook
from super_bench.integrations.inspect_ext.tools import notebook_tools, submit

INSTRUCTIONS = """\
You are setting up and running an experiment from a research code repository, in a stateful Jupyter
notebook, to answer the task you are given.

Act with the tools: `execute` runs a notebook cell (Python, `!shell` commands, `%magic` lines such
as `%cd`), `edit` changes lines of a file, `continue_wait` and `interrupt` deal with a cell that is
still running when its time limit expires. When you have the result, call `submit` with the answer
as JSON, structured exactly as the task asks."""


MAX_TURNS_WITHOUT_ACTION = 3
_TURNS_KEY = "super_bench_turns_without_action"


async def _until_the_episode_ends(state: AgentState) -> bool:
    env = current_notebook().env
    if env.done:
        return False
    turns = 0 if state.output.message.tool_calls else store().get(_TURNS_KEY, 0) + 1
    store().set(_TURNS_KEY, turns)
    if turns >= MAX_TURNS_WITHOUT_ACTION:
        env.stop("format_error")
        return False
    return True


@agent
def super_agent(instructions: str = INSTRUCTIONS) -> Agent:
    """A ReAct agent for SUPER: notebook tools, and a submit the environment checks."""
    return react(
        prompt=AgentPrompt(instructions=instructions),
        tools=notebook_tools(),
        submit=AgentSubmit(tool=submit(), answer_only=True, keep_in_messages=True),
        on_continue=_until_the_episode_ends,
    )
