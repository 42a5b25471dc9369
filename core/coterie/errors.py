"""Exceptions. A :class:`UsageError` is the user's mistake and becomes a friendly reply."""

from __future__ import annotations


class CoterieError(Exception):
    """Base class for every error coterie raises on purpose."""


class UsageError(CoterieError):
    """Bad input from a chat user: shown to them as a friendly error with a usage line.

    Raising it anywhere while a command is handled means: nothing was rolled, nothing changed.
    """

    def __init__(self, message: str, *, usage: str | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage
        self.hint = hint


class ConfigError(CoterieError):
    """The configuration file is invalid; the message names the key and the problem."""


class PluginError(CoterieError):
    """A plugin could not be found, loaded or used."""
