"""An on-disk cache of model replies (SQLite), so that a rerun is reproducible and free.

The key is a hash of the whole request (messages, sampling settings, stop sequences, seed)
and of the model's identity, so a different ``--seed`` asks the model again. The cache is a
convenience: if the file cannot be used, a warning is logged and calls go to the model.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    finish_reason TEXT,
    created REAL NOT NULL
)
"""


class Reply(NamedTuple):
    """What a provider returned for one request."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None = None


class ResponseCache:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._broken = False

    @staticmethod
    def key(identity: dict[str, Any], request: dict[str, Any]) -> str:
        blob = json.dumps({"identity": identity, "request": request}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # A connection per operation: cheap next to a model call, and safe across threads and processes.
        connection = sqlite3.connect(self.path, timeout=30)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute(_SCHEMA)
        return connection

    def _give_up(self, error: Exception) -> None:
        self._broken = True
        log.warning("the response cache %s cannot be used (%s); calling the model without it", self.path, error)

    def get(self, key: str) -> Reply | None:
        if self._broken:
            return None
        try:
            with self._lock:
                connection = self._connect()
                try:
                    row = connection.execute(
                        "SELECT text, prompt_tokens, completion_tokens, finish_reason FROM replies WHERE key = ?",
                        (key,),
                    ).fetchone()
                finally:
                    connection.close()
        except (sqlite3.Error, OSError) as e:
            self._give_up(e)
            return None
        return Reply(*row) if row else None

    def put(self, key: str, model: str, reply: Reply) -> None:
        if self._broken:
            return
        try:
            with self._lock:
                connection = self._connect()
                try:
                    with connection:
                        connection.execute(
                            "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (key, model, *reply, time.time()),
                        )
                finally:
                    connection.close()
        except (sqlite3.Error, OSError) as e:
            self._give_up(e)
