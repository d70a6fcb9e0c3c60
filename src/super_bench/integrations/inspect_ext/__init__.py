"""SUPER in Inspect AI: the ``super_bench/...`` tasks, a notebook tool set, a ReAct agent, and scorers.

Needs the ``inspect`` extra. Inspect finds the tasks through the ``inspect_ai`` entry point
(``_registry``): ``inspect eval super_bench/demo_expert --model ...``. Each sample gets its own
super-bench environment (sandbox and kernel), started by the task's setup and stopped by its cleanup.
"""
