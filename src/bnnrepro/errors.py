"""Errors that name what went wrong and how to fix it."""


class DivergedError(RuntimeError):
    """Training diverged: the objective or a variational parameter left its finite range."""
