"""Measuring one cell right, and the cross-checks of every adapter against the reference."""
