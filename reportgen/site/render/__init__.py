"""Rendering and writing: the Jinja environment, cells, CSV text, assets and their modes, and the writers."""
