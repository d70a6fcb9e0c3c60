"""Package installs by agent code: the package proxy and its store (the shared package cache), the index
pages it serves, and how a task's pip is pointed at it."""
