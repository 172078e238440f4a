"""episodic: the core of a long-term episodic memory service for AI agents.

The core holds the episode model, the write policy, the ranking and the use cases.
It talks to storage, search, embeddings and workflows only through the ports in
``episodic.application.ports``; adapters under ``episodic.adapters`` implement them (SQLite and
MiniLM locally, AWS services in the cloud). Nothing here imports boto3, sqlite3,
numpy or torch at module level outside the adapters, so the layer stays light.
"""

__version__ = "0.1.0"
