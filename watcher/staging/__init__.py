"""Staging: the one contract between capture and the changelog, and the sink that writes it."""
