"""The HTTP JSON API over the notebook environment (FastAPI).

Every request needs ``Authorization: Bearer <token>``, except ``GET /openapi.json``: the description
of the API, which is the same for every server and tells nothing about its sessions. Errors
are JSON ``{"detail": "..."}`` with a 4xx status that says what was wrong; a failed sandbox is a
503; nothing answers with a traceback.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field

from super_bench._bearer import BearerAuth
from super_bench._pydantic import Model
from super_bench._version import __version__
from super_bench.actions import Action, ActionType
from super_bench.errors import KernelError, SandboxError, SuperBenchError
from super_bench.integrations.server.sessions import Session, SessionError, SessionManager, SessionRequest
from super_bench.scoring import Metrics, ScoreDetails
from super_bench.trajectory import Step, StopReason, Trajectory

log = logging.getLogger(__name__)


class StepRequest(Model):
    """One action, as in a trajectory, with the agent's optional reasoning."""

    # Built at import, not on first use: FastAPI wraps a request body's model in an annotation of its own,
    # where pydantic would build it inline and warn of the body's alias.
    model_config = ConfigDict(extra="forbid", defer_build=False)

    type: ActionType
    content: Any = Field(None, description="The cell, the edit text, or the answer; none for interrupt/continue_wait")
    thought: str | None = Field(None, description="Kept in the trajectory")


class SessionStarted(Model):
    session_id: str
    task_id: str
    observation: str = Field(description="The first observation: the task's query")
    pre_executed: list[Step] = Field(description="Cells the harness ran before the agent starts (Masked tasks)")


class StepReply(Model):
    step: Step = Field(description="The step as recorded (its raw output is in the trajectory)")
    done: bool = Field(description="The episode is over and its sandbox stopped; the scores are in the session")
    terminated: bool = Field(description="The episode ended with this step in an end state of the task (a submission)")
    truncated: bool = Field(description="A budget ran out with this step and ended the episode")
    stop_reason: StopReason | None


class Scores(Model):
    metrics: Metrics
    details: ScoreDetails


class SessionState(Model):
    session_id: str
    task_id: str
    done: bool
    stop_reason: StopReason | None
    trajectory: Trajectory
    scores: Scores | None = Field(description="Once done")
    error: str | None = Field(None, description="Why the sandbox failed, if it did")


class SessionSummary(Model):
    session_id: str
    task_id: str
    done: bool
    steps: int
    idle_seconds: float


def _state(session: Session) -> SessionState:
    trajectory = session.env.trajectory
    scores = None
    if session.metrics is not None and session.details is not None:
        scores = Scores(metrics=session.metrics, details=session.details)
    return SessionState(
        session_id=session.id,
        task_id=session.task.task_id,
        done=session.done,
        stop_reason=trajectory.stop_reason,
        trajectory=trajectory,
        scores=scores,
        error=session.error,
    )


def create_app(manager: SessionManager, token: str) -> FastAPI:
    """The API over ``manager``'s sessions, for clients that send ``token``."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(manager.reap_forever)
                yield
                group.cancel_scope.cancel()
        finally:
            await manager.close_all()

    app = FastAPI(
        title="super-bench environment server",
        version=__version__,
        description="SUPER's stateful notebook environment over HTTP: start a session on a task, send actions, "
        "read the trajectory and scores.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.add_middleware(BearerAuth, token=token, open=_OPEN)
    _add_error_handlers(app)

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            schema.setdefault("components", {})["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
            schema["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    @app.post("/v1/sessions", status_code=201, response_model_exclude={"pre_executed": {"__all__": {"output"}}})
    async def create_session(request: SessionRequest) -> SessionStarted:
        """Start a sandbox and kernel on a task; returns the session id and the first observation."""
        session = await manager.create(request)
        return SessionStarted(
            session_id=session.id,
            task_id=session.task.task_id,
            observation=session.task.query,
            pre_executed=[s for s in session.env.trajectory.steps if s.pre_executed],
        )

    @app.get("/v1/sessions")
    async def list_sessions() -> list[SessionSummary]:
        """Every session the server holds."""
        return [
            SessionSummary(
                session_id=s.id,
                task_id=s.task.task_id,
                done=s.done,
                steps=len(s.env.trajectory.agent_steps),
                idle_seconds=s.idle_for(),
            )
            for s in manager.sessions()
        ]

    @app.post("/v1/sessions/{session_id}/step", response_model_exclude={"step": {"output"}})
    async def step(session_id: str, request: StepRequest) -> StepReply:
        """Perform one action. Blocks until the cell finishes or its soft timeout expires."""
        session = manager.get(session_id)
        result = await manager.step(session_id, Action(type=request.type, content=request.content), request.thought)
        return StepReply(
            step=result,
            done=session.done,
            terminated=result.terminated,
            truncated=result.truncated,
            stop_reason=session.env.trajectory.stop_reason,
        )

    @app.get("/v1/sessions/{session_id}")
    async def get_session(session_id: str) -> SessionState:
        """The trajectory so far and, once the episode is over, the scores."""
        return _state(manager.get(session_id))

    @app.delete("/v1/sessions/{session_id}")
    async def delete_session(session_id: str) -> SessionState:
        """Stop the session's sandbox; returns its final trajectory and scores."""
        return _state(await manager.delete(session_id))

    return app


# What a client may ask without the token: exactly this method and path, so that tools that read the
# API description (code generators, API explorers) need no credentials.
_OPEN = {("GET", "/openapi.json")}


def _add_error_handlers(app: FastAPI) -> None:
    def answer(status: int, detail: str) -> JSONResponse:
        return JSONResponse({"detail": detail}, status_code=status)

    async def session_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, SessionError)
        return answer(exc.status, str(exc))

    async def sandbox_error(request: Request, exc: Exception) -> JSONResponse:
        log.warning("%s %s: the sandbox failed: %s", request.method, request.url.path, exc)
        return answer(503, f"the sandbox failed ({type(exc).__name__}: {exc}); the session, if any, is over")

    async def bad_request(request: Request, exc: Exception) -> JSONResponse:
        return answer(422, str(exc))

    async def invalid_request(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        errors = exc.errors()
        content_type = request.headers.get("content-type", "")
        if request.method == "POST" and not _is_json(content_type) and await request.body():
            # FastAPI reads a body as JSON only when it is labelled so; `curl -d` labels it a form.
            sent = f"Content-Type: {content_type}" if content_type else "no Content-Type"
            return answer(
                415,
                f"the request body must be JSON sent with the header Content-Type: application/json (this one had "
                f"{sent}); with curl, add -H 'Content-Type: application/json' or use --json",
            )
        for error in errors:
            if error.get("type") == "json_invalid":
                reason = (error.get("ctx") or {}).get("error", "not JSON")
                return answer(400, f"the request body is not valid JSON ({reason})")
        problems = []
        for error in errors:
            where = ".".join(str(part) for part in error.get("loc", ()) if part != "body")
            message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
            problems.append(f"{where}: {message}" if where else message)
        return answer(422, "invalid request: " + "; ".join(problems))

    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("%s %s failed", request.method, request.url.path, exc_info=exc)
        return answer(500, f"internal error ({type(exc).__name__}: {exc}); the server log has the details")

    app.add_exception_handler(SessionError, session_error)
    app.add_exception_handler(SandboxError, sandbox_error)
    app.add_exception_handler(KernelError, sandbox_error)
    app.add_exception_handler(SuperBenchError, bad_request)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(Exception, unexpected)


def _is_json(content_type: str) -> bool:
    media_type = content_type.split(";", maxsplit=1)[0].strip().lower()
    return media_type == "application/json" or media_type.endswith("+json")
