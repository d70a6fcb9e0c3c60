"""What agent code plants to attack the harness's privileges (tests/sandbox/test_privilege.py, tests/e2e/test_ordinary_user.py):
programs named like every helper the harness could start, each recording whom it ran as, and the probes
read back (limits, capabilities, the stopping of every watcher)."""

from __future__ import annotations

HELPERS = [
    *("bwrap", "setpriv", "prlimit", "timeout", "env", "sh", "dash", "bash", "cat", "cp", "mv", "mkdir", "dirname"),
    *("chmod", "mount", "umount", "mkfs.ext4", "mke2fs", "true", "nsenter", "unshare", "runuser", "su", "sudo"),
    *("mktemp", "wc", "rm"),  # the one-process edit's script
]

# Plants a program named like each helper in every directory agent code can write on its PATH (for local,
# only those in the task's own directory: elsewhere they are the host's) and those its environment names.
# Each records whom it ran as and with which capabilities, then runs the real program, as an attacker's would.
PLANT = r"""
import os, stat
HELPERS = {helpers!r}
log = os.path.join(os.environ['TMPDIR'], 'planted.log')
script = '''#!/bin/sh
caps=""
while read -r key value; do
  case "$key" in CapPrm:|CapEff:|CapBnd:|CapAmb:) caps="$caps $key$value";; esac
done < /proc/self/status
echo "RAN ${{0##*/}} $(/usr/bin/id -u)$caps" >> {{log}}
for d in /usr/bin /bin /usr/sbin /sbin; do [ -x "$d/${{0##*/}}" ] && exec "$d/${{0##*/}}" "$@"; done
exit 127
'''.replace('{{log}}', log)
root = {task_root!r}
candidates = os.environ['PATH'].split(os.pathsep) + [os.getcwd(), os.environ['HOME'], os.environ['TMPDIR'],
              os.environ['VIRTUAL_ENV'], os.path.join(os.environ['VIRTUAL_ENV'], 'bin')]
planted = []
for directory in dict.fromkeys(os.path.abspath(d or '.') for d in candidates):
    if root and not directory.startswith(root):
        continue
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError:
        continue
    if not os.access(directory, os.W_OK):
        continue
    for name in HELPERS:
        path = os.path.join(directory, name)
        try:
            if os.path.lexists(path):
                os.replace(path, path + '.real')
            with open(path, 'w') as f:
                f.write(script)
            os.chmod(path, 0o755)
        except OSError:
            continue
    planted.append(directory)
print('planted in', sorted(planted))
"""

LIMITS = "print(open('/proc/self/limits').read())"


def limit_of(limits: str, name: str) -> str:
    line = next(line for line in limits.splitlines() if line.startswith(name))
    return line[len(name) :].split()[0]


# Prints every process of the sandbox: its id, user, and permitted, effective, bounding and ambient capabilities
# (lines PROC ...), and whether agent code may gain privileges.
CAPABILITIES = (
    "import glob\n"
    "for status in sorted(glob.glob('/proc/[0-9]*/status')):\n"
    "    fields = dict(line.split(':', 1) for line in open(status) if ':' in line)\n"
    "    print('PROC', status.split('/')[2], fields['Uid'].split()[0],"
    " *(fields[k].strip() for k in ('CapPrm', 'CapEff', 'CapBnd', 'CapAmb')))\n"
    "!grep -h NoNewPrivs /proc/self/status"
)


def processes(seen: str) -> list[list[str]]:
    """The PROC lines of CAPABILITIES' output, split: pid, uid, CapPrm, CapEff, CapBnd, CapAmb."""
    return [line.split()[1:] for line in seen.splitlines() if line.startswith("PROC ")]


# Stops every process of the task that agent code can signal, but itself: whatever keeps time in the sandbox.
STOP_WATCHERS = """
import os, signal, time
marker = os.environ['SUPER_BENCH_SANDBOX']
stopped = []
for pid in filter(str.isdigit, os.listdir('/proc')):
    if int(pid) == os.getpid():
        continue
    try:
        if f'SUPER_BENCH_SANDBOX={marker}'.encode() not in open(f'/proc/{pid}/environ', 'rb').read().split(b'\\0'):
            continue
        os.kill(int(pid), signal.SIGSTOP)
        stopped.append(pid)
    except OSError:
        pass
print('stopped', stopped, flush=True)
time.sleep(60)
"""
