"""Errors of the official provider SDKs, translated into super-bench's.

The OpenAI and Anthropic SDKs share their error classes' names and retry by themselves on
rate limits, timeouts, connection failures and server errors; what reaches us has outlived
the retries. A bad key or an unknown model is a configuration problem (the whole run should
stop). A service that cannot be used (unreachable, overloaded, failing) is an infrastructure
failure, which the runner retries. A request the service refused (a prompt longer than the
model's context, say) is the episode's own failure: it is recorded, not retried.
"""

from __future__ import annotations

import re
from types import ModuleType

from super_bench.errors import ConfigError, ModelError, ModelUnavailableError, SuperBenchError


def _message(error: Exception) -> str:
    body = getattr(error, "body", None)
    detail = body.get("error", body) if isinstance(body, dict) else None
    text = detail.get("message") if isinstance(detail, dict) else None
    if not isinstance(text, str) or not text:
        text = re.sub(r"^Error code: \d+ - ", "", str(getattr(error, "message", "") or error))
    text = text.strip()
    return text if len(text) <= 500 else text[:500] + " ..."


def translate(
    error: Exception, sdk: ModuleType, *, spec: str, server: str, key_variable: str, retries: int
) -> SuperBenchError:
    """The super-bench error for an exception raised by an SDK call."""
    message = _message(error)
    if isinstance(error, sdk.AuthenticationError):
        return ConfigError(
            f"{server} rejected the API key for {spec} (401: {message}); set {key_variable} to a valid key"
        )
    if isinstance(error, sdk.PermissionDeniedError):
        return ConfigError(f"{server} refused access to {spec} (403: {message}); check the key's permissions")
    if isinstance(error, sdk.NotFoundError):
        return ConfigError(
            f"{server} does not know the model {spec} (404: {message}); check the model name, and for a "
            "self-hosted server its base URL (usually ending in /v1)"
        )
    if isinstance(error, sdk.APITimeoutError):
        return ModelUnavailableError(f"{server} did not answer {spec} in time, {retries} retries included")
    if isinstance(error, sdk.APIConnectionError):
        cause = error.__cause__ or error.__context__
        return ModelUnavailableError(
            f"cannot reach the model server {server} for {spec} ({cause or message}), {retries} retries included; "
            "is it running, and is the base URL right?"
        )
    if isinstance(error, sdk.APIResponseValidationError):
        return ModelUnavailableError(f"{server} sent a malformed reply for {spec}: {message}")
    if isinstance(error, sdk.RateLimitError):
        return ModelUnavailableError(f"{server} still rate-limits {spec} after {retries} retries (429: {message})")
    if isinstance(error, sdk.APIStatusError):
        status = error.status_code
        if status >= 500:
            return ModelUnavailableError(
                f"{server} kept failing for {spec} (HTTP {status}: {message}), {retries} retries included"
            )
        return ModelError(f"{server} refused the request for {spec} (HTTP {status}: {message})")
    return ModelUnavailableError(f"{spec}: {type(error).__name__}: {message}")
