"""The chat log: one record per command on the ``coterie.chat`` logger (see
:meth:`coterie.framework.app.Coterie.handle`), with the platform, room and user ids, the command
and how long it took — never the message text."""

from __future__ import annotations

import logging
from typing import Any

chat_log = logging.getLogger("coterie.chat")


def chat_record(level: int, command: str, fields: dict[str, Any]) -> None:
    """Log ``command %s`` at ``level`` with ``fields`` as the record's extra fields, as
    ``chat_log.log(level, "command %s", command, extra=fields)`` would, without the search of
    the caller's frame the logging module makes for every record (a few microseconds of every
    command): the record says it was made here."""
    record = chat_log.makeRecord(
        chat_log.name, level, __file__, _LINE, "command %s", (command,), None, "chat_record", fields
    )
    chat_log.handle(record)


#: the line the record says it was made at (the call above)
_LINE = chat_record.__code__.co_firstlineno + 5
