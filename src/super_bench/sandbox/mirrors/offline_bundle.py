"""The offline bundle (``super-bench mirror``'s output): what a task set needs from the network,
on disk, for air-gapped runs (``--offline-bundle DIR``).

::

    DIR/offline-bundle.json          what is in it: the manifest below
    DIR/git/<host>/<path>.bundle     each task repository as a git bundle, HEAD at the task's commit
    DIR/wheels/                      optional: the wheels the gold solutions install (a pip wheelhouse)
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

from pydantic import ConfigDict, Field, ValidationError

from super_bench._pydantic import Model
from super_bench.errors import SandboxError

MANIFEST = "offline-bundle.json"
FORMAT = 1


class BundledRepository(Model):
    model_config = ConfigDict(extra="forbid")

    url: str
    bundle: str = Field(description="Path of the git bundle, relative to the offline bundle")
    commits: list[str] = Field(default_factory=list, description="The tasks' commits it holds (HEAD: the first)")
    tasks: list[str] = Field(default_factory=list)


class OfflineBundle(Model):
    """The manifest of an offline bundle, and where the bundle lies."""

    model_config = ConfigDict(extra="forbid")

    format: int = FORMAT
    created_at: datetime
    super_bench_version: str
    tasks: list[str]
    repositories: list[BundledRepository]
    wheels: str | None = Field(None, description="The wheelhouse, relative to the bundle; None without one")
    packages_as_of: date | datetime | None = None
    pip_index: str | None = None
    problems: list[str] = Field(default_factory=list, description="What could not be bundled, and why")
    skipped: list[str] = Field(
        default_factory=list, description="What the gold solutions install from elsewhere (local paths, editables)"
    )
    root: Path = Field(Path("."), exclude=True)

    @classmethod
    def open(cls, path: Path) -> OfflineBundle:
        manifest = Path(path) / MANIFEST
        if not manifest.is_file():
            raise SandboxError(
                f"{path} is not an offline bundle (it has no {MANIFEST}); make one with `super-bench mirror`"
            )
        try:
            bundle = cls.model_validate_json(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError, ValidationError) as e:
            raise SandboxError(f"{manifest}: not a readable offline bundle manifest: {e}") from e
        if bundle.format != FORMAT:
            raise SandboxError(f"{manifest}: format {bundle.format}; this super-bench reads format {FORMAT}")
        root = Path(path).resolve()
        for relative in [r.bundle for r in bundle.repositories] + [bundle.wheels or "."]:
            if not (root / relative).resolve().is_relative_to(root):
                raise SandboxError(f"{manifest}: {relative} lies outside the bundle")
        return bundle.model_copy(update={"root": root})

    def write(self) -> Path:
        path = self.root / MANIFEST
        path.write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")
        return path

    @property
    def wheelhouse(self) -> Path | None:
        return None if self.wheels is None else self.root / self.wheels

    def git_mirrors(self) -> dict[str, str]:
        """Repository URL -> its git bundle."""
        return {repo.url.rstrip("/").removesuffix(".git"): str(self.root / repo.bundle) for repo in self.repositories}
