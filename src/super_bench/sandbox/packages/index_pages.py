"""A package index's project pages, as the package cache reads and serves them: the simple repository API
in JSON (PEP 691, with upload times: PEP 700) or HTML (PEP 503), read into one form and written as JSON.

What a file's entry keeps: its name, where it is, its hashes, the Python versions it needs, whether it
was yanked, when it was uploaded and its size. Its separate metadata file (PEP 658) is left out, so
that pip reads a wheel's metadata from the wheel, which the cache holds.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urldefrag, urljoin

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
ACCEPT = f"{JSON_TYPE}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
_SUFFIXES = (".whl", ".tar.gz", ".zip", ".tar.bz2", ".tgz", ".tar", ".egg")


def normalize(name: str) -> str:
    """A project's normalized name (PEP 503): lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class IndexFile:
    filename: str
    url: str  # absolute
    hashes: dict[str, str] = field(default_factory=dict)
    requires_python: str | None = None
    yanked: bool | str = False
    upload_time: str | None = None
    size: int | None = None

    @property
    def sha256(self) -> str | None:
        value = self.hashes.get("sha256", "").lower()
        return value if re.fullmatch(r"[0-9a-f]{64}", value) else None

    @property
    def version(self) -> str | None:
        """The version in the file's name (``name-1.0-py3-none-any.whl``, ``name-1.0.tar.gz``)."""
        stem = next((self.filename[: -len(s)] for s in _SUFFIXES if self.filename.endswith(s)), None)
        if stem is None:
            return None
        parts = stem.split("-")
        if self.filename.endswith(".whl"):
            return parts[1] if len(parts) >= 5 else None
        return parts[-1] if len(parts) >= 2 else None


def parse_page(body: bytes, content_type: str, page_url: str) -> list[IndexFile]:
    """The files of a project page, JSON or HTML by its content type; relative URLs made absolute."""
    if "json" in content_type:
        return _parse_json(json.loads(body), page_url)
    parser = _Anchors(page_url)
    parser.feed(body.decode("utf-8", "replace"))
    return parser.files


def _parse_json(data: dict[str, Any], page_url: str) -> list[IndexFile]:
    files = []
    for entry in data.get("files", []):
        if not isinstance(entry, dict) or "filename" not in entry or "url" not in entry:
            continue
        size = entry.get("size")
        files.append(
            IndexFile(
                filename=str(entry["filename"]),
                url=urljoin(page_url, str(entry["url"])),
                hashes={str(k): str(v) for k, v in (entry.get("hashes") or {}).items()},
                requires_python=entry.get("requires-python"),
                yanked=entry.get("yanked", False),
                upload_time=entry.get("upload-time"),
                size=size if isinstance(size, int) else None,
            )
        )
    return files


class _Anchors(HTMLParser):
    def __init__(self, page_url: str) -> None:
        super().__init__()
        self.base = page_url
        self.files: list[IndexFile] = []
        self._anchor: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "base":
            href = dict(attrs).get("href")
            if href:
                self.base = urljoin(self.base, href)
        elif tag == "a":
            self._anchor, self._text = dict(attrs), []

    def handle_data(self, data: str) -> None:
        if self._anchor is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag != "a" or self._anchor is None:
            return
        attrs, self._anchor = self._anchor, None
        href = attrs.get("href")
        if not href:
            return
        url, fragment = urldefrag(urljoin(self.base, href))
        name, _, value = fragment.partition("=")
        filename = url.rstrip("/").rsplit("/", 1)[-1]
        yanked = attrs.get("data-yanked")
        self.files.append(
            IndexFile(
                filename=filename,
                url=url,
                hashes={name: value} if value else {},
                requires_python=attrs.get("data-requires-python"),
                yanked=(yanked or True) if "data-yanked" in attrs else False,
            )
        )


def render_page(name: str, files: list[IndexFile]) -> bytes:
    """A project page in the JSON simple API (version 1.1), the files as given."""
    entries = []
    for f in files:
        entry: dict[str, Any] = {"filename": f.filename, "url": f.url, "hashes": f.hashes}
        if f.requires_python:
            entry["requires-python"] = f.requires_python
        if f.yanked:
            entry["yanked"] = f.yanked
        if f.upload_time:
            entry["upload-time"] = f.upload_time
        if f.size is not None:
            entry["size"] = f.size
        entries.append(entry)
    versions = sorted({v for f in files if (v := f.version)})
    page = {"meta": {"api-version": "1.1"}, "name": name, "versions": versions, "files": entries}
    return json.dumps(page).encode()
