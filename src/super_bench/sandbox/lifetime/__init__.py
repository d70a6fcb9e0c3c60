"""What the harness creates on the host and how long it lives: the watchdog (supervisor, watchdog) that
cleans up when the harness dies, the reaper that kills and removes what a task left, a run's scratch
directory, and the build cache of what is built once and kept across runs."""
