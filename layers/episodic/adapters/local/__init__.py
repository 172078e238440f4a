"""The embedded local backend: SQLite, a folder archive, MiniLM embeddings, in-process schedules."""
