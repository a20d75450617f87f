"""Measuring one thing right: threads, the timing loop and lock, provenance, cells and checks."""
