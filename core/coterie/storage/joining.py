"""Work an adapter adds to the next transaction its task opens: one unit of work per message.

An adapter claims each delivery before answering it (so that two deliveries of the same event,
to one worker or to two, are answered once). The claim is a write; the command the message
carries writes too, in its own transaction. :func:`join_next_transaction` lets the adapter put
the claim *into* the command's transaction: the next transaction this task opens through the
app's store (:class:`~coterie.storage.ambient.AmbientStore`, ``app.state``) first runs
:meth:`Joiner.join` with that transaction, and calls :meth:`Joiner.committed` once it committed
(:meth:`Joiner.rolled_back` if it did not).

A joiner that finds it must not go on (the delivery is claimed by someone else) raises from
:meth:`~Joiner.join`: that transaction is rolled back, and the adapter, which sees that its
joiner did not commit, answers nothing. When the task opens no transaction (a message that is
not a command, a command that changes nothing) or the one it opened was rolled back, the adapter
does the work in a transaction of its own before replying.
"""

from __future__ import annotations

import contextvars
from typing import Any, Protocol


class Joiner(Protocol):
    """Work for the next transaction of a task."""

    async def join(self, tx: Any) -> None:
        """Run inside the transaction, before anything else in it."""
        ...

    def committed(self) -> None:
        """That transaction has committed."""
        ...

    def rolled_back(self) -> None:
        """That transaction did not commit, or may not have (its commit failed, or the task was
        cancelled while it waited for it), or :meth:`join` raised."""
        ...


_next: contextvars.ContextVar[Joiner | None] = contextvars.ContextVar(
    "coterie_next_transaction_joiner", default=None
)
#: the joiner waiting for the current task's next transaction, if any (a store asks it before
#: it calls :func:`joined`: most transactions have none)
next_joiner = _next


def join_next_transaction(joiner: Joiner | None) -> None:
    """Make ``joiner`` part of the next transaction the current task opens through the app's
    store (``None``: take back a joiner that has not joined one yet)."""
    _next.set(joiner)


async def joined(tx: Any) -> Joiner | None:
    """Called by the store as a transaction opens: run the waiting joiner's work in ``tx``; the
    joiner (pass it to :func:`landed` once ``tx`` committed), or ``None``."""
    joiner = _next.get()
    if joiner is None:
        return None
    _next.set(None)
    try:
        await joiner.join(tx)
    except BaseException:
        joiner.rolled_back()
        raise
    return joiner


def landed(joiner: Joiner | None) -> None:
    """The transaction a joiner joined has committed."""
    if joiner is not None:
        joiner.committed()


def not_landed(joiner: Joiner | None) -> None:
    """The transaction a joiner joined did not commit (or may not have)."""
    if joiner is not None:
        joiner.rolled_back()
