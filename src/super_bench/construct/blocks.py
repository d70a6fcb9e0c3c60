"""Reading a gold solution as blocks of work, for Masked tasks.

Each cell gets a category from what it does: ``setup`` (clone, check out, change into the
repository), ``dependencies`` (pip, conda, apt), ``data`` (download, unpack, convert or cut data),
``configuration`` (write or edit config files), ``cpu`` (adapt GPU code to the CPU), ``issue``
(change the code: a fix, or what the task needs), ``goal`` (run the experiment's scripts, and the
last cell, which reports the answer) and ``other`` (looking around: ``ls``, ``cat``). A block is
every cell of one category that can be masked: dependencies, data, configuration, cpu, issue, goal.

A cell after a block is *independent* of it when it does not use what the block wrote, defined or
installed, and does not write what the block wrote; such cells (but never the goal's) can run
before the block, so that the Masked task asks only for the block and what depends on it.
"""

from __future__ import annotations

import ast
import builtins
import posixpath
import re
import shlex
import sys
from dataclasses import dataclass, field

from super_bench import shell
from super_bench.actions import Action

MASKABLE = ("dependencies", "data", "configuration", "cpu", "issue", "goal")

_GPU = re.compile(
    r"cuda|gpu|cupy|asnumpy|\bcpu\b|device|fp16|bf16|\.half\(|amp\b|CUDA_VISIBLE_DEVICES|map_location|nvidia", re.I
)
_CONFIG_FILE = re.compile(r"(^|/)[^/]*conf[^/]*$|\.(json|ya?ml|ini|cfg|toml|conf|gin|jsonnet)$", re.I)
_CODE_FILE = re.compile(r"\.(py|sh|pyx|c|cc|cpp|cu|h|js|ts|r|jl|pl|java|scala|go|rs)$", re.I)
_INSTALLERS = {"pip", "pip3", "conda", "mamba", "micromamba", "apt", "apt-get", "yum", "brew", "poetry", "uv"}
_FETCHERS = {"wget", "curl", "gdown", "unzip", "tar", "gunzip", "bunzip2", "7z", "kaggle", "huggingface-cli", "aria2c"}
_DATA_SCRIPT = re.compile(r"download|prepare|preprocess|get_data|fetch|convert|split|build_data|make_data", re.I)
_INSTALL_MODULES = {"pip", "ensurepip", "spacy", "nltk.downloader", "conda"}
_READ_ONLY = {
    "ls",
    "cat",
    "head",
    "tail",
    "grep",
    "pwd",
    "echo",
    "find",
    "tree",
    "wc",
    "du",
    "df",
    "nvidia-smi",
    "which",
}
_SETUP_GIT = {"clone", "checkout", "fetch", "pull", "switch", "reset", "submodule", "lfs"}
# Files Python code writes: open(path, "w"), and savers given a literal path (np.save("x.npy", a)).
_WRITE_MODE = re.compile(r"""open\(\s*f?r?["']([^"']+)["']\s*,\s*(?:mode\s*=\s*)?["'][wax]""")
_SAVER = re.compile(r"""\.(?:to_csv|to_json|to_parquet|savetxt|save|write_text)\(\s*f?r?["']([^"']+)["']""")
_REDIRECT = re.compile(r">>?\s*([^\s;&|>]+)")
_CAPTURE = re.compile(r"^(\s*[\w.,\[\] ]+=)\s*[!%].*$")
_LOOKING = {"print", "display", "pprint", "help"}
_DATA_CALLS = re.compile(r"load_dataset|hf_hub_download|snapshot_download|urlretrieve|requests\.get|gdown\.", re.I)


@dataclass
class CellInfo:
    """What one solution cell does."""

    index: int
    action: Action
    category: str
    writes: set[str] = field(default_factory=set)  # files it creates or changes
    defines: set[str] = field(default_factory=set)  # Python names it assigns or imports
    uses: set[str] = field(default_factory=set)  # Python names it reads without defining them
    installs: set[str] = field(default_factory=set)  # packages it installs ("*": unknown ones)
    imports: set[str] = field(default_factory=set)  # top-level modules it imports
    scripts: list[str] = field(default_factory=list)  # the shell commands that run a script
    computes: bool = False  # it runs Python that does more than show things


def analyse(solution: list[Action]) -> list[CellInfo]:
    """Every solution cell with its category and what it reads and writes."""
    cells = [_analyse(i, action) for i, action in enumerate(solution)]
    for cell in reversed(cells):  # the last cell reports the answer: part of the goal
        if cell.action.type == "execute":
            cell.category = "goal"
            break
    return cells


def _analyse(index: int, action: Action) -> CellInfo:
    content = str(action.content or "")
    if action.type == "edit":
        path = content.split("\n", 1)[0].strip()
        return CellInfo(index, action, _edit_category(path, content), writes={path})
    if action.type != "execute":
        return CellInfo(index, action, "other")
    commands = shell.shell_commands(content)
    info = CellInfo(index, action, "other")
    _python_facts(content, info)
    simple = [words for command in commands for words in shell.simple_commands(command)]
    words = [w for w in map(shell.program, simple) if w]
    for w in words:
        info.writes.update(_shell_writes(w))
        if _runs_script(w):
            info.scripts.append(shlex.join(w))
    info.writes.update(m.group(1) for m in _REDIRECT.finditer(" ".join(commands)) if not m.group(1).startswith("/dev/"))
    info.category = _execute_category(content, words, info)
    return info


def _edit_category(path: str, content: str) -> str:
    body = content.split("\n", 1)[1] if "\n" in content else ""
    if _CODE_FILE.search(path):
        return "cpu" if _GPU.search(body) else "issue"
    if _CONFIG_FILE.search(path):
        return "configuration"
    return "data"


def _execute_category(content: str, words: list[list[str]], info: CellInfo) -> str:
    programs = [posixpath.basename(w[0]) for w in words]
    if re.search(r"^\s*%cd\b", content, re.M) and all(p in ("git", "cd", *_READ_ONLY) for p in programs):
        return "setup"
    if any(p == "git" and len(w) > 1 and w[1] in _SETUP_GIT for p, w in zip(programs, words)):
        return "setup"
    for p, w in zip(programs, words):
        if p in _INSTALLERS or (re.match(r"python[\d.]*$", p) and _module(w) in _INSTALL_MODULES):
            info.installs.update(_installed(w))
            return "dependencies"
        if re.match(r"python[\d.]*$", p) and len(w) > 2 and w[1] == "setup.py" and w[2] in ("install", "develop"):
            info.installs.add("*")
            return "dependencies"
    if re.search(r"^\s*%(pip|conda) install", content, re.M):
        info.installs.add("*")
        return "dependencies"
    edited = [path for path in info.writes if _CODE_FILE.search(path)]
    if any(p == "sed" for p in programs) or (edited and not any(_runs_script(w) for w in words)):
        targets = edited or sorted(info.writes)
        if targets and all(_CODE_FILE.search(t) for t in targets):
            return "cpu" if _GPU.search(content) else "issue"
        if targets and all(_CONFIG_FILE.search(t) for t in targets):
            return "configuration"
    if re.search(r"CUDA_VISIBLE_DEVICES|\.cpu\(\)|torch\.device\(", content) and not any(map(_runs_script, words)):
        return "cpu"
    for w in words:
        if _runs_script(w):
            script = next((a for a in w[1:] if not a.startswith("-")), "")
            return "data" if _DATA_SCRIPT.search(script) else "goal"
    if any(p in _FETCHERS for p in programs) or _DATA_CALLS.search(content):
        return "data"
    if info.writes:
        if all(_CONFIG_FILE.search(t) for t in info.writes) or re.search(r"configparser|yaml\.|config", content):
            return "configuration"
        return "data"
    if info.computes or any(p not in _READ_ONLY for p in programs):
        return "goal"  # Python or another program that does the work: part of running the experiment
    return "other"


def _python_facts(content: str, info: CellInfo) -> None:
    info.writes.update(m.group(1) for m in _WRITE_MODE.finditer(content))
    info.writes.update(m.group(1) for m in _SAVER.finditer(content))
    magic = re.match(r"\s*%%writefile\s+(?:-a\s+)?(\S+)", content)
    if magic:
        info.writes.add(magic.group(1))
        return
    # IPython syntax as Python: `x = !cmd` assigns x; `!cmd` and `%magic` lines are not Python.
    lines = [_CAPTURE.sub(r"\1 None", line) for line in content.splitlines()]
    try:
        tree = ast.parse("\n".join(line for line in lines if not line.lstrip().startswith(("!", "%"))))
    except SyntaxError:
        return
    info.computes = any(_does_work(statement) for statement in tree.body)
    loaded: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else info.defines).add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                info.defines.add((alias.asname or alias.name).split(".")[0])
            module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
            if module:
                info.imports.add(module.split(".")[0])
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            info.defines.add(node.name)
    info.uses = loaded - info.defines - set(dir(builtins))


def _does_work(statement: ast.stmt) -> bool:
    """Anything but imports, bare expressions and calls that only show something (``print(...)``)."""
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return False
    if not isinstance(statement, ast.Expr):
        return True
    call = statement.value
    return isinstance(call, ast.Call) and not (isinstance(call.func, ast.Name) and call.func.id in _LOOKING)


def _module(words: list[str]) -> str | None:
    return words[words.index("-m") + 1] if "-m" in words[:-1] else None


def _runs_script(words: list[str]) -> bool:
    program = posixpath.basename(words[0])
    if re.match(r"python[\d.]*$", program):
        module = _module(words)
        if module is not None:
            return module not in _INSTALL_MODULES
        return "-c" not in words and any(not a.startswith("-") for a in words[1:])
    if program in ("bash", "sh", "torchrun", "accelerate", "deepspeed"):
        return len(words) > 1
    return words[0].startswith("./") or words[0].endswith((".sh", ".py"))


def _installed(words: list[str]) -> set[str]:
    """The packages an install command names; ``*`` where they are unknown (``-r requirements.txt``)."""
    args = words[words.index("install") + 1 :] if "install" in words else []
    if "-r" in args or "-e" in args or "." in args or not args:
        return {"*"}
    names = set()
    for arg in args:
        if arg.startswith("-"):
            continue
        name = re.split(r"[<>=!~\[;@ ]", posixpath.basename(arg))[0]
        names.add(name.split("-")[0].lower().replace("-", "_") if arg.endswith(".whl") else name.lower())
    return names


def _shell_writes(words: list[str]) -> set[str]:
    program = posixpath.basename(words[0])
    args = [a for a in words[1:] if not a.startswith("-")]
    if program == "sed" and any(a.startswith("-i") for a in words[1:]):
        return set(args[1:]) if "-e" not in words else set(args)
    if program in ("cp", "mv", "ln") and len(args) >= 2:
        return {args[-1]}
    if program in ("mkdir", "touch", "tee"):
        return set(args)
    for flag in ("-O", "-o", "-d", "-C", "--output", "--out", "--output_dir", "--output-dir"):
        if flag in words[:-1]:
            return {words[words.index(flag) + 1]}
    if program in ("wget", "curl", "gdown") and args:
        return {posixpath.basename(args[-1].split("?")[0])}
    return set()


def depends(later: CellInfo, block: list[CellInfo]) -> bool:
    """Whether ``later`` needs what ``block`` does, or changes what it writes (so it cannot run first)."""
    text = str(later.action.content or "")
    written = {w for cell in block for w in cell.writes}
    if later.writes & written:
        return True
    for path in written:
        name = posixpath.normpath(path)
        if name in text or ("." in posixpath.basename(name) and posixpath.basename(name) in text):
            return True
    if later.uses & {d for cell in block for d in cell.defines}:
        return True
    installed = {p for cell in block for p in cell.installs}
    if installed:
        foreign = {m for m in later.imports if m not in sys.stdlib_module_names}
        return bool(foreign & installed) or ("*" in installed and bool(foreign))
    return False
