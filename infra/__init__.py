"""The CDK app that deploys the episodic memory service (``python -m infra.app``; see infra/README.md)."""
