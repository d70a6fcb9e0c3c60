"""The environment server: SUPER's notebook environment as an HTTP JSON API (``super-bench serve``).

Needs the ``server`` extra (FastAPI and uvicorn). ``sessions`` holds the sessions and their limits,
``app`` the routes, authentication and error answers.
"""
