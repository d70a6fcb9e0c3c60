"""The notebook environment offered to other tools: ``gym`` (``make()``, a Gymnasium-style environment for agent
loops of your own), ``server`` (an HTTP JSON API, ``super-bench serve``), ``inspect_ext`` (Inspect AI's tasks,
tools and scorers) and ``mcp_ext`` (the Model Context Protocol: ``super-bench mcp`` and the ``mcp:COMMAND`` agent).
Each builds on the environment's public API; the optional ones need their extra."""
