"""The environment of every pip the harness runs itself (``sandbox build``'s installs and downloads, the kernel
environment's, the paper's pip fetched for task environments): the host's pip configuration left out.

A build that read the host's ``/etc/pip.conf`` (or ``/etc/xdg/pip``, the user's ``~/.config/pip``, a
``PIP_EXTRA_INDEX_URL``) would take packages from wherever that names: an extra index with no upload times
defeats ``--packages-as-of``, a constraint file changes versions, and the record would not say so. pip
reads no configuration file at all when ``PIP_CONFIG_FILE`` is the null device, and no variable that is
not there. What a build should use is given on its command line (``--pip-arg``), and recorded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def isolated_pip_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (default: this process's) without any ``PIP_*`` variable, and with ``PIP_CONFIG_FILE``
    the null device, so that pip reads none of the host's configuration files."""
    source = os.environ if environ is None else environ
    env = {k: v for k, v in source.items() if not k.upper().startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env
