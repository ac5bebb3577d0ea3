"""The error of a study file that cannot be run (config/studies/<name>.yaml)."""


class StudyError(ValueError):
    """A study file that cannot be run; the message names the file and the fix."""
