"""Reflexion: retry a failed attempt in a fresh sandbox, with a reflection on what went wrong.

``reflexion:AGENT`` (default ``react-super``) runs AGENT. An attempt fails when it ends without
a submission, or when the model, shown the attempt, judges its answer wrong (the self-check).
Then the model writes a reflection, the environment starts a new attempt (``new_attempt``: a new
sandbox and kernel, the Masked pre-executed cells run again), and AGENT tries again with the
reflections added to the query, up to ``attempts`` times.

The final attempt is the trajectory that is scored; ``metadata["reflexion"]["attempts"]``
lists every attempt with its self-check and reflection, and keeps the earlier ones'
trajectories whole. The environment's budgets decide the rest: steps, execution time and wall
time apply to each attempt; tokens and cost are counted over all of them, so those budgets
cover the whole task, and no new attempt starts once they are spent.
"""

from __future__ import annotations

import inspect
import json
import re
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict, Field

from super_bench._pydantic import Model
from super_bench.agents.base import AGENTS, Agent, AgentOptions
from super_bench.agents.llm import cut_observation, model_for, volatile_paths
from super_bench.errors import AgentError
from super_bench.models import ChatModel, Message, ModelRequest
from super_bench.scoring import submission_of

if TYPE_CHECKING:
    from super_bench.environment import AgentEnv
    from super_bench.trajectory import Trajectory

_VERDICT = re.compile(r"VERDICT:\s*\**\s*(PASS|FAIL)", re.IGNORECASE)
SHOWN_STEPS = 20


class ReflexionSettings(Model):
    model_config = ConfigDict(extra="forbid", frozen=True)

    attempts: int = Field(3, ge=1, description="Attempts in all, the first included")
    self_check: bool = Field(True, description="Ask the model to check a submitted answer before accepting it")


def _transcript(trajectory: Trajectory) -> str:
    """The attempt's last steps, briefly: each action and the end of its observation."""
    steps = trajectory.agent_steps[-SHOWN_STEPS:]
    lines = []
    if len(trajectory.agent_steps) > len(steps):
        lines.append(f"[{len(trajectory.agent_steps) - len(steps)} earlier steps not shown]")
    for step in steps:
        content = step.action.content
        shown = content if isinstance(content, str) else json.dumps(content)
        lines.append(f"Action ({step.action.type}):\n{shown}\nObservation:\n{cut_observation(step.observation, 500)}")
    return "\n\n".join(lines) or "(no steps)"


class ReflexionAgent:
    name = "reflexion"
    _own_settings = ("attempts", "self_check")

    def __init__(self, arg: str | None = None, options: AgentOptions | None = None, *, model: ChatModel | None = None):
        options = options or AgentOptions()
        self.inner_spec = arg or "react-super"
        if self.inner_spec.partition(":")[0] == self.name:
            raise AgentError("reflexion cannot wrap itself")
        own = {k: v for k, v in options.settings.items() if k in self._own_settings}
        self.settings = ReflexionSettings.model_validate(own)
        self.inner_options = options.model_copy(
            update={"settings": {k: v for k, v in options.settings.items() if k not in self._own_settings}}
        )
        self.name = f"reflexion:{self.inner_spec}"
        self.model = model or model_for("reflexion", options)
        self.seed = options.seed
        self._inner()  # a bad inner agent or setting fails now, not after the first attempt

    def _inner(self) -> Agent:
        """A fresh inner agent, sharing this agent's model where it takes one (one client, one script)."""
        name, _, arg = self.inner_spec.partition(":")
        factory = AGENTS.get(name)
        if "model" in inspect.signature(factory).parameters:
            agent: Any = factory(arg or None, self.inner_options, model=self.model)  # type: ignore[call-arg]
        else:  # an agent of no model (replay, say) is not handed this agent's
            agent = factory(arg or None, self.inner_options.model_copy(update={"model": None}))
        if not isinstance(agent, Agent):
            raise AgentError(f"the agent {name!r} does not provide name and run(env)")
        return agent

    def run(self, env: AgentEnv) -> None:
        task = env.task
        attempts: list[dict[str, Any]] = []
        reflections: list[str] = []
        for number in range(1, self.settings.attempts + 1):
            self._inner().run(env)
            env.stop("agent_stopped")  # no-op unless the inner agent returned without a reason
            attempt = env.trajectory
            check: str | None = None
            if number == self.settings.attempts or env.budget_left().model_calls_spent:
                break
            if submission_of(attempt) is not None:
                if not self.settings.self_check:
                    break
                passed, check = self._self_check(env, attempt)
                if passed or env.budget_left().model_calls_spent:
                    break
            reflections.append(self._reflect(env, attempt, check))
            attempts.append({"attempt": number, "self_check": check, "reflection": reflections[-1]})
            finished = env.new_attempt(query=_with_reflections(task.query, reflections))
            attempts[-1]["trajectory"] = finished.model_dump(mode="json")
        attempts.append({"attempt": len(attempts) + 1, "self_check": check})
        env.trajectory.metadata["reflexion"] = {
            "inner_agent": self.inner_spec,
            "final_attempt": len(attempts),
            "reflections": reflections,
            "attempts": attempts,
        }

    def _ask(self, env: AgentEnv, prompt: str) -> str:
        messages: list[Message] = [
            {"role": "system", "content": "You review attempts at tasks carried out in a Jupyter notebook."},
            {"role": "user", "content": prompt},
        ]
        request = ModelRequest(messages=messages, max_tokens=500, temperature=0.2, top_p=0.5, seed=self.seed)
        response = self.model.complete(request, volatile=volatile_paths(env))
        env.add_usage(response.usage)
        return response.text.strip()

    def _self_check(self, env: AgentEnv, attempt: Trajectory) -> tuple[bool, str]:
        reply = self._ask(
            env,
            f"The task:\n{env.task.query}\n\nThe end of the attempt:\n{_transcript(attempt)}\n\n"
            f"The submitted answer: {json.dumps(attempt.submission)}\n\n"
            "Is the answer supported by what the attempt actually ran and printed, and did the attempt follow the "
            "task's instructions (data, model, settings, number of examples and epochs)? Answer on the first line "
            "with VERDICT: PASS or VERDICT: FAIL, then explain in one or two sentences.",
        )
        verdict = _VERDICT.search(reply)
        return verdict is None or verdict.group(1).upper() == "PASS", reply  # an unclear check keeps the answer

    def _reflect(self, env: AgentEnv, attempt: Trajectory, check: str | None) -> str:
        if check is not None:
            why = f"It submitted {json.dumps(attempt.submission)}, but a check judged it wrong:\n{check}"
        else:
            why = f"It ended without submitting an answer (stop reason: {attempt.stop_reason})."
        return self._ask(
            env,
            f"The task:\n{env.task.query}\n\nAn attempt at it failed. {why}\n\nThe end of the attempt:\n"
            f"{_transcript(attempt)}\n\nIn a few sentences, say what went wrong and what to do differently. The next "
            "attempt starts from a fresh notebook: nothing done in this one remains.",
        )


def _with_reflections(query: str, reflections: list[str]) -> str:
    notes = "\n".join(f"Attempt {i}: {text}" for i, text in enumerate(reflections, 1))
    return (
        f"{query}\n\nEarlier attempts at this task failed. The notebook has been reset since: nothing from them "
        f"remains (files, installed packages, variables). What was learned from them:\n{notes}"
    )
