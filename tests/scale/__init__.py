"""The replica harness (python -m tests.scale.run) and the check of its HAProxy configuration."""
