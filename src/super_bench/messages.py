"""What the agent is told: every note the harness adds to what an agent sees, in one place.

Agents read these, trajectories keep them and papers quote them, so a change of wording shows in one diff.
Notes of the harness begin with ``[super-bench]``; a value the harness could not keep is replaced by a
bracketed ``[super-bench: ...]`` note. Nothing here decides anything: the callers choose which note applies.
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from super_bench.trajectory import Step

from super_bench._sizes import human_size

NOTE = "[super-bench]"


def _gib(size: int | None) -> str:
    return human_size(size or 0)


# -- cells that run on ---------------------------------------------------------------------------------
def still_running(seconds: float) -> str:
    """A cell past its soft timeout."""
    return (
        f"\n{NOTE} The cell has run for {seconds:.0f} s and is still running. "
        "Send `continue_wait` to keep waiting for it, or `interrupt` to stop it; "
        "any other action interrupts it first."
    )


def pre_executed_cell_interrupted(seconds: float) -> str:
    return f"\n{NOTE} The cell ran over {seconds:.0f} s and was interrupted."


CELL_INTERRUPTED = f"\n{NOTE} The cell was interrupted."
NOTHING_TO_WAIT_FOR = f"{NOTE} No cell is running, so there is nothing to wait for."
NOTHING_TO_INTERRUPT = f"{NOTE} No cell is running, so there is nothing to interrupt."
PREVIOUS_CELL_INTERRUPTED = f"{NOTE} The previous cell was still running; it was interrupted first.\n"
PREVIOUS_CELL_WOULD_NOT_STOP = (
    f"{NOTE} The previous cell was still running and did not stop when interrupted; "
    "the kernel was restarted and all Python state was lost.\n"
)


# -- actions not carried out -----------------------------------------------------------------------------
def not_performed(action: str, why: str) -> str:
    """An action refused: ``why`` is a limit's note (``limit_passed``) or a sentence of its own."""
    return f"{NOTE} The {action} action was not performed:{why}"


def content_refused(action: str, problem: str) -> str:
    return not_performed(action, f" its content {problem}.")


def cut_short(action: str, limit: str) -> str:
    """An action a limit stopped while it ran (``limit``: ``limit_passed``)."""
    return f"{NOTE} The {action} action was cut short:{limit}"


def pre_executed_skipped(action: str) -> str:
    return f"{NOTE} A pre-executed {action!r} action was skipped."


def not_kept(value: object, problem: str) -> str:
    """What is kept in place of a value that cannot be (too deep, not JSON, ...)."""
    return f"[super-bench: a {type(value).__name__} not kept: it {problem}]"


def nothing_submitted(problem: object, max_depth: int) -> str:
    return (
        f"{NOTE} Nothing was submitted: {problem}. Submit a JSON value nested at most "
        f'{max_depth} levels deep, for example {{"accuracy": 0.81}}.'
    )


def episode_over(stop_reason: str) -> str:
    return f"\n{NOTE} The episode is over ({stop_reason}): no more actions."


# -- limits --------------------------------------------------------------------------------------------
def wall_time_passed(limit: float | None) -> str:
    return f"\n{NOTE} The task's wall-time limit ({limit:g} s) has passed; all it ran was stopped."


def disk_limit_passed(limit: int | None) -> str:
    return f"\n{NOTE} The task's disk limit ({_gib(limit)}) was passed; all the task ran was stopped."


def disk_full(limit: int | None) -> str:
    return (
        f"\n{NOTE} The task's disk limit ({_gib(limit)}) is reached: writing fails with "
        "'No space left on device' until files are removed."
    )


# -- the kernel ----------------------------------------------------------------------------------------
KERNEL_HAD_DIED = f"{NOTE} The kernel had died; a new one was started and all Python state was lost.\n"


def no_new_kernel(error: object) -> str:
    """No kernel could be started in place of one that was stopped: the episode ends."""
    return (
        f"{NOTE} The kernel was stopped, and no new kernel could be started: {error}\n"
        f"{NOTE} The episode ends here: what was done in this notebook left it unable to run code.\n"
    )


def death_cause(exit_status: int | None, *, out_of_memory: bool, memory_limit: int | None) -> str:
    """Why a kernel died, as far as its exit status and the memory limit's records tell."""
    if out_of_memory:
        return f"killed for going over the task's memory limit of {_gib(memory_limit)}: out of memory"
    if exit_status is not None and exit_status < 0:
        try:
            cause = f"killed by signal {signal.Signals(-exit_status).name}"
        except ValueError:
            cause = f"killed by signal {-exit_status}"
        if exit_status == -signal.SIGKILL:
            cause += ", often a sign of running out of memory"
        return cause
    if exit_status is not None:
        return f"exited with status {exit_status}"
    return "stopped responding and was killed"


def kernel_frame_too_large(limit: int) -> str:
    """The kernel sent one message frame larger than the harness takes (``kernel.client.max_frame_bytes``)."""
    return (
        f"\n{NOTE} The kernel sent one message of more than {limit:,} bytes, the largest the harness takes: "
        "the connection to it was cut and the kernel stopped. Print large data in pieces, or write it to a file.\n"
    )


def kernel_died(cause: str, *, restart_failed: str = "", log: str = "") -> str:
    """A kernel that died during the action, replaced (or not: ``restart_failed``, from ``no_new_kernel``)."""
    if restart_failed:
        note = f"\n{NOTE} The kernel died ({cause}).\n{restart_failed.rstrip()}"
    else:
        note = (
            f"\n{NOTE} The kernel died ({cause}). A new kernel was started: all Python state was lost "
            "(variables, imports, the working directory); files on disk are kept."
        )
    return note + (f"\nLast lines of the kernel's log:\n{log}" if log else "")


def output_dropped(chars: int) -> str:
    """The marker where the middle of a cell's output past its ceiling was dropped."""
    return f"\n[... {chars:,} characters of output dropped by super-bench ...]\n"


def output_not_written(chars: int, error: OSError) -> str:
    return (
        f"[super-bench: the harness could not write this cell's output to its file ({chars:,} characters by then: "
        f"{error.strerror or error}); the output was let go and the rest of it ignored. Print less, or free disk]\n"
    )


def output_out_of_memory(chars: int) -> str:
    return (
        f"[super-bench: the harness ran out of memory holding this cell's output ({chars:,} characters by then); "
        "the output was let go and the rest of it ignored. Print less, or write long output to a file]\n"
    )


def image_too_large(mime: str, size: int, max_chars: int) -> str:
    return (
        f"[super-bench: an image ({mime}, {size:,} characters of base64) was not kept: images are kept "
        f"up to {max_chars:,} characters each, within the limit of output kept]\n"
    )


def image_not_base64(mime: str) -> str:
    return f"[super-bench: an image ({mime}) was not kept: its data is not base64]\n"


# -- the edit action -------------------------------------------------------------------------------------
def edit_unreadable(path: str, error: object) -> str:
    return f"No edit made: cannot read {path}: {error}"


def edit_no_such_file(path: str, cwd: str) -> str:
    return f"No edit made: the file {path} does not exist (looked in {cwd})."


def edit_too_large(path: str, limit: int) -> str:
    return (
        f"No edit made: {path} holds more than {limit:,} bytes, and the edit action reads files of at most "
        f"{limit:,} bytes. "
        "Change a file this large with code in an execute action (sed, or Python that reads it line by line)."
    )


def edit_failed(path: str, error: object) -> str:
    return f"No edit made: cannot edit {path}: {error}"


def edit_not_written(error: object) -> str:
    return f"No edit made: cannot write the file: {error}"


# -- the start of a task ----------------------------------------------------------------------------------
def pre_executed_text(steps: list[Step]) -> str:
    """The cells a Masked task ran before the agent starts, with their outputs, as the agent reads them."""
    parts = ["These cells have already been run in the notebook, in this order:"]
    for n, step in enumerate(steps, start=1):
        parts.append(f"Cell {n} ({step.action.type}):\n```\n{step.action.content}\n```")
        parts.append(f"Output:\n```\n{step.observation.strip()}\n```" if step.observation.strip() else "No output.")
    return "\n\n".join(parts)
