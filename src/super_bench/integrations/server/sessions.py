"""The server's sessions: one environment each, a limit on how many run at once, idle reaping.

Environment calls block (a cell may run for minutes), so each runs in a worker thread while the
event loop keeps answering other requests; a per-session lock serialises a session's calls. A
session whose episode is over has its sandbox stopped at once and keeps only its trajectory and
scores until it is deleted or reaped.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import anyio
from anyio import to_thread
from pydantic import ConfigDict, Field, model_validator

from super_bench._names import TaskSet
from super_bench._pydantic import Model
from super_bench.actions import Action
from super_bench.environment import EnvConfig, Environment
from super_bench.errors import KernelError, SandboxError, SuperBenchError
from super_bench.scoring import Metrics, ScoreDetails, ScoreMode, score_trajectory
from super_bench.tasks.loaders import find_task
from super_bench.tasks.model import Task
from super_bench.trajectory import Step

log = logging.getLogger(__name__)
_FORGET_AFTER = 1000  # ended session ids remembered, to answer 410 instead of 404
_STOPPING = "the server is stopping: no new session starts; start one on the server's next run"


class SessionError(SuperBenchError):
    """A request the sessions cannot serve; ``status`` is the HTTP status that says why."""

    status = 400


class SessionNotFound(SessionError):
    status = 404


class SessionGone(SessionError):
    status = 410


class SessionBusy(SessionError):
    """The limit on sessions at once is reached."""

    status = 429


class ServerStopping(SessionError):
    """The server is stopping: no session starts any more."""

    status = 503


class EpisodeOver(SessionError):
    status = 409


class BadSessionRequest(SessionError):
    status = 422


class SessionRequest(Model):
    """What a new session runs: a task by id (from a source the server offers), or an ad-hoc query."""

    # Built at import, not on first use: FastAPI wraps a request body's model in an annotation of its own,
    # where pydantic would build it inline and warn of the body's alias.
    model_config = ConfigDict(extra="forbid", defer_build=False)

    task_id: str | None = Field(None, min_length=1, description="A task id, e.g. tinyreg")
    source: str | None = Field(None, description="Where the task comes from (default: the server's first source)")
    task_set: TaskSet | None = Field(None, description="expert, masked or auto (default: search every set)")
    query: str | None = Field(None, min_length=1, description="An ad-hoc task: just instructions, no grading")

    @model_validator(mode="after")
    def _one_kind(self) -> SessionRequest:
        if (self.task_id is None) == (self.query is None):
            raise ValueError("give either task_id (with optional source and task_set) or query")
        if self.query is not None and (self.source or self.task_set):
            raise ValueError("source and task_set go with task_id, not with an ad-hoc query")
        return self


@dataclass
class Session:
    id: str
    task: Task
    env: Environment
    # Held by the worker thread for the whole of an environment call, so a request cancelled
    # while waiting for its thread cannot let another call into the environment too early.
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_active: float = field(default_factory=time.monotonic)
    done: bool = False  # the episode is over and the sandbox stopped
    ended: str | None = None  # why the session was deleted, once it was
    metrics: Metrics | None = None
    details: ScoreDetails | None = None
    error: str | None = None

    def idle_for(self) -> float:
        return 0.0 if self.lock.locked() else time.monotonic() - self.last_active


class SessionManager:
    """Sessions by id. Its async methods run on the event loop and hand every environment call to a
    worker thread."""

    def __init__(
        self,
        env_config: EnvConfig,
        *,
        sources: tuple[str, ...] = ("demo", "hf"),
        max_sessions: int = 4,
        idle_timeout: float = 1800,
        mode: ScoreMode = "corrected",
    ) -> None:
        if not sources:
            raise ValueError("a server needs at least one task source")
        self.env_config = env_config
        self.sources = sources
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self.mode = mode
        self._sessions: dict[str, Session] = {}
        self._ended: OrderedDict[str, str] = OrderedDict()
        self._starting = 0
        self.stopping = False  # set once close_all began: nothing new starts

    # -- queries -------------------------------------------------------------------------------
    @property
    def live(self) -> int:
        """Sessions holding a sandbox, or starting one."""
        return self._starting + sum(not s.done for s in self._sessions.values())

    def sessions(self) -> list[Session]:
        return list(self._sessions.values())

    def get(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is not None:
            return session
        if session_id in self._ended:
            raise SessionGone(f"session {session_id} is closed: {self._ended[session_id]}")
        raise SessionNotFound(f"no session {session_id!r}; POST /v1/sessions starts one")

    # -- lifecycle -----------------------------------------------------------------------------
    async def create(self, request: SessionRequest) -> Session:
        if self.stopping:
            raise ServerStopping(_STOPPING)
        if self.live >= self.max_sessions:
            raise SessionBusy(
                f"the server runs at most {self.max_sessions} session(s) at once and all are in use; "
                "DELETE a session you no longer need, or retry when one ends "
                f"(idle sessions are closed after {self.idle_timeout:g} s)"
            )
        self._starting += 1
        try:
            task, env = await to_thread.run_sync(self._start, request)
        finally:
            self._starting -= 1
        if self.stopping:  # the server began to stop while the sandbox started: it is not handed out
            await to_thread.run_sync(env.close)
            raise ServerStopping(_STOPPING)
        session = Session(secrets.token_hex(8), task, env)
        self._sessions[session.id] = session
        log.info("session %s: started task %s", session.id, task.task_id)
        return session

    def _start(self, request: SessionRequest) -> tuple[Task, Environment]:
        task = self._resolve(request)
        env = Environment(self.env_config)
        try:
            env.reset(task, agent="server")
        except BaseException:
            env.close()
            raise
        return task, env

    def _resolve(self, request: SessionRequest) -> Task:
        if request.query is not None:
            return Task(task_id="query", query=request.query)
        assert request.task_id is not None
        source = request.source or self.sources[0]
        if source not in self.sources:
            raise BadSessionRequest(
                f"source {source!r} is not offered here; this server offers: {', '.join(self.sources)}"
            )
        try:
            return find_task(request.task_id, source, request.task_set)
        except SuperBenchError as e:
            raise BadSessionRequest(str(e)) from e

    async def step(self, session_id: str, action: Action, thought: str | None = None) -> Step:
        """Perform an action; a session's steps run one at a time, in the order they arrive."""
        session = self.get(session_id)
        return await to_thread.run_sync(self._step, session, action, thought)

    def _step(self, session: Session, action: Action, thought: str | None) -> Step:
        with session.lock:
            if session.ended:
                raise SessionGone(f"session {session.id} is closed: {session.ended}")
            if session.done:
                raise EpisodeOver(self._over(session))
            try:
                step = session.env.step(action, thought)
            except (SandboxError, KernelError) as e:
                session.error = f"{type(e).__name__}: {e}"
                session.env.stop("infra_error")
                self._finish(session)
                raise
            finally:
                session.last_active = time.monotonic()
            if session.ended:
                raise SessionGone(f"session {session.id} was closed while the step ran: {session.ended}")
            if session.env.done:
                self._finish(session)
            return step

    async def delete(self, session_id: str, reason: str = "deleted by a DELETE request") -> Session:
        """Stop the session's sandbox. A step in flight is cut short: its kernel is killed under it."""
        session = self.get(session_id)
        self._forget(session, reason)
        if session.lock.locked():
            session.env.kill_kernel()  # a no-op if the step ended the episode and closed the environment meanwhile
        await to_thread.run_sync(self._close, session)
        log.info("session %s: %s", session.id, reason)
        return session

    def _close(self, session: Session) -> None:
        with session.lock:
            if not session.done:
                session.env.stop("cancelled")
                self._finish(session)

    async def reap(self) -> list[str]:
        """Close sessions idle for longer than the idle timeout; returns their ids."""
        idle = [s.id for s in self._sessions.values() if s.idle_for() > self.idle_timeout]
        for session_id in idle:
            if session_id in self._sessions:
                await self.delete(session_id, f"closed after {self.idle_timeout:g} s without an action")
        return idle

    async def reap_forever(self) -> None:
        period = max(0.1, min(self.idle_timeout / 4, 30.0))
        while True:
            await anyio.sleep(period)
            await self.reap()

    async def close_all(self) -> None:
        """Close every session (a step in flight is cut short and answered 410); nothing starts after."""
        self.stopping = True
        with anyio.CancelScope(shield=True):
            for session_id in list(self._sessions):
                await self.delete(session_id, "the server stopped")

    # -- helpers -------------------------------------------------------------------------------
    def _finish(self, session: Session) -> None:
        """Stop the sandbox and score the episode (in a worker thread)."""
        trajectory = session.env.close()
        assert trajectory is not None
        session.metrics, session.details = score_trajectory(trajectory, session.task, self.mode)
        session.done = True

    def _forget(self, session: Session, reason: str) -> None:
        session.ended = reason
        self._sessions.pop(session.id, None)
        self._ended[session.id] = reason
        while len(self._ended) > _FORGET_AFTER:
            self._ended.popitem(last=False)

    @staticmethod
    def _over(session: Session) -> str:
        reason = session.env.trajectory.stop_reason
        failure = f"; it failed: {session.error}" if session.error else ""
        return f"the episode is over ({reason}){failure}; GET /v1/sessions/{session.id} has the trajectory and scores"
