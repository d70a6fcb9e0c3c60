"""Resource limits on a task beyond wall time: memory (a cgroup, or the address-space limit) and disk
(a task file system of its own, or a watch on the directory's size)."""
