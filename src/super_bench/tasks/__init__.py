"""Tasks: the record, the loaders of every task source, and the checks of a task file."""
