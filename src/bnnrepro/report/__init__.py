"""The reproduction report: a PDF built with Typst from the artifact manifest."""

import shlex

INVOCATION_VARIABLE = "BNNREPRO_INVOCATION"
"""The environment variable in which the Snakefile records the command that runs it, for the report's provenance."""

INVOCATION_LIMIT = 8192
"""The most characters of that command the variable holds. Every job inherits it, and Linux starts no process whose
environment has a string over 128 KiB: a command naming the 2,100 targets of a benchmark batch is 300 KiB."""


def invocation_record(argv: list[str], limit: int = INVOCATION_LIMIT) -> str:
    """`argv` as one shell command; one longer than `limit` keeps its first and its last arguments, up to limit / 2
    characters each (the options, the first targets, a trailing --config), and says how many it leaves out between."""
    quoted = [shlex.quote(argument) for argument in argv]
    if len(whole := " ".join(quoted)) <= limit:
        return whole
    head = _leading_within(quoted, limit // 2)
    tail = _leading_within(quoted[len(head) :][::-1], limit // 2)[::-1]
    left_out = len(argv) - len(head) - len(tail)
    return " ".join([*head, f"[... {left_out} arguments left out of this record ...]", *tail])


def _leading_within(words: list[str], characters: int) -> list[str]:
    """The longest first part of `words` whose join with spaces has at most `characters` characters."""
    length = -1
    for count, word in enumerate(words):
        length += len(word) + 1
        if length > characters:
            return words[:count]
    return words
