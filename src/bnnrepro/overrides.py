"""Hydra overrides given on the command line, made safe for Hydra's override grammar.

A run folder or data file is named by its settings (`.../lr=0.1+seed=0/`, `omega=4+seed=0.npz`), and Hydra's grammar
rejects an unquoted '=' in a value. Path-valued keys (`run_dir`, `dataset.path`, any key ending in `path` or `dir`)
are quoted here, so a user passes paths as they are; any other value that the grammar rejects gets an error that
shows the quoting.
"""

from __future__ import annotations

import re

PATH_KEY = re.compile(r"^[+~]*([\w.]*(path|dir))$")
QUOTED = re.compile(r"""^(['"]).*\1$""", re.DOTALL)


def quote_path_values(overrides: list[str]) -> list[str]:
    """The overrides with each unquoted value of a path-valued key single-quoted (quotes and backslashes escaped)."""
    quoted = []
    for override in overrides:
        key, sep, value = override.partition("=")
        if sep and PATH_KEY.match(key) and value and not QUOTED.match(value):
            value = "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
        quoted.append(f"{key}{sep}{value}")
    return quoted


def quoting_hint(error: Exception, overrides: list[str]) -> str:
    """The message of Hydra's override parse error, with how to quote a value that holds '=', spaces or quotes."""
    return (
        f"{error}\nA value that holds '=', spaces or quotes must be quoted for Hydra: key='value' (in a shell, "
        f"\"key='value'\"). Overrides given: {' '.join(overrides)}"
    )
