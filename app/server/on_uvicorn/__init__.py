"""Portico's connections under uvicorn: its httptools protocol with the head limits and
deadlines Envoy has under pyvoy, and a loop turn's replies written together."""
