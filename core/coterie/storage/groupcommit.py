"""Group commit for the SQLite store: the lock its write transactions queue on, and the open
transaction that the ones which come while another ends share, with one ``COMMIT`` for all
(:class:`~coterie.storage.sqlite.LiteScope` drives them; docs/storage.md).

Each commit costs the same system calls whatever it holds (the WAL's locks, a frame per page it
changed), and most of a message's time on SQLite is its commit: the messages of a busy bot
commit together instead, and none of them returns before that commit.

A group forms by itself when transactions queue for the writer, or are about to (other
callbacks ready in the loop). Under a steady flow of messages that is not often: each message
reaches its transaction after reading its request, parsing it and routing it, and its
transaction usually ends before the next one gets there (Telegram's webhook under load: 1.2
messages a commit). So while the store has company (a recent group held more than one
transaction), every transaction that ends leaves a group open and its commit waits
:data:`LINGER` seconds for others to join. :data:`PATIENCE` such groups in a row that nobody
joined end the company: a bot with one message at a time, or a sequence of messages awaited one
after another, commits each at once, as before."""

from __future__ import annotations

import asyncio
import contextvars
import sqlite3
from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coterie.storage.sql import SQLStore


class WriteLock:
    """The SQLite store's one writer at a time (its transactions, in this process), first come
    first served. The lock is handed straight to the next waiter, so it stays held while anyone
    waits, and a holder can tell whether anyone does (:attr:`waiting`): a transaction that ends
    while others wait leaves its commit to be made with theirs
    (:class:`~coterie.storage.sqlite.LiteScope`)."""

    __slots__ = ("_held", "_turns")

    def __init__(self) -> None:
        self._held = False
        #: the futures of the tasks waiting, in order (a cancelled one is done: skipped)
        self._turns: deque[asyncio.Future[None]] = deque()

    def locked(self) -> bool:
        return self._held

    @property
    def waiting(self) -> bool:
        """Whether a task waits for the lock."""
        return any(not turn.done() for turn in self._turns)

    async def acquire(self) -> None:
        if not self._held:  # (nobody waits for a lock nobody holds)
            self._held = True
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._turns.append(turn)
        try:
            await turn  # the holder hands the lock over by setting its result
        except BaseException:
            if turn.done() and not turn.cancelled():
                self.release()  # it came as this task was cancelled: pass it on
            elif turn in self._turns:
                self._turns.remove(turn)
            raise

    def release(self) -> None:
        """Hand the lock to the first task still waiting, else free it."""
        turns = self._turns
        while turns:
            turn = turns.popleft()
            if not turn.done():
                turn.set_result(None)
                return
        self._held = False


class CommitGroup:
    """A write transaction left open by a message's transaction that ended while others waited
    for the writer: the transactions that wait join it, each in a savepoint of its own, and
    one commit makes them all durable (group commit). Each waits for that commit before it
    returns, so nothing it wrote is acted on (a reply sent, an event marked answered) before it
    is on disk; a transaction that fails is rolled back to its savepoint alone."""

    __slots__ = ("committed", "committer", "linger", "members", "written")

    def __init__(self, written: set[tuple[str, str]] | None) -> None:
        #: set once the group's ``COMMIT`` returned (its error if it failed)
        self.committed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        #: the task that commits the group once the transactions ahead of it are done
        self.committer: asyncio.Task[None] | None = None
        #: the transactions in the group
        self.members = 1
        #: the ``kv`` keys written in the group so far (``None``: any may have been)
        self.written = written
        #: seconds its committer waits for more transactions before it commits
        self.linger = 0.0

    def settle(self, error: BaseException | None) -> None:
        if self.committed.done():
            return
        if error is None:
            self.committed.set_result(None)
        else:
            self.committed.set_exception(error)
            self.committed.exception()  # (seen: a member cancelled meanwhile never awaits it)


#: transactions one commit makes durable at most; the next one begins a group of its own
GROUP_LIMIT = 32
#: seconds the commit of a group opened while the store has company waits for more transactions
#: to join it (measured under 16 messages in flight, `bench/throughput.py`: 1 ms took Slack on
#: SQLite from 1,234-1,308 to 1,385-1,490 commands a second and Telegram from 434-445 to
#: 464-483, with p50 latency no higher; 0.5 ms gained less, 2 ms no more)
LINGER = 0.001
#: groups in a row that waited :data:`LINGER` and that nobody joined before the store stops
#: waiting (one alone turned it off 50 times in 2,000 Telegram messages under that load, each
#: time until transactions happened to queue again)
PATIENCE = 3


def others_ready() -> bool:
    """Whether other callbacks are due in this turn of the event loop: tasks that may come for
    the writer before a commit left to a task of its own would run (their transactions then
    join the group). Read from asyncio's queue of ready callbacks, an attribute of CPython's
    loops that a loop without it answers as none: each transaction then commits at once, as a
    transaction that nobody follows does (without the extra turn of the loop)."""
    return bool(getattr(asyncio.get_running_loop(), "_ready", None))


def join_group(store: SQLStore) -> CommitGroup | None:
    """The store's open group, joined in a savepoint (called holding the write lock, as a
    transaction begins), or ``None``: there is none, or it is full (then committed now; its
    committer, when it comes, finds nothing to do), or SQLite rolled its transaction back (an
    I/O error: its members fail). The transaction then begins one of its own."""
    group = store._group
    if group is None:
        return None
    db = store._lite()
    if not db.in_transaction:
        end_group(store, group, sqlite3.OperationalError("the group's transaction was lost"))
        return None
    if group.members >= GROUP_LIMIT:
        end_group(store, group, None)
        return None
    db.execute("SAVEPOINT grouped")
    group.members += 1
    return group


def has_company(store: SQLStore) -> bool:
    """Whether a recent group of the store held more than one transaction (and fewer than
    :data:`PATIENCE` waited alone since): others are likely to come while the next one
    commits, so a transaction that ends leaves a group open for them, its commit
    :data:`LINGER` seconds later."""
    return store._company > 0


def wants_group(store: SQLStore) -> bool:
    """Whether the transaction that just ended should stay open as a group instead of
    committing at once: others wait for the writer, others are due in this turn of the loop
    (:func:`others_ready`), or the store has company (:func:`has_company`)."""
    return store._write_lock.waiting or others_ready() or has_company(store)


def open_group(store: SQLStore, written: set[tuple[str, str]] | None) -> CommitGroup:
    """Leave the transaction that just ended open as a group (``written``: the ``kv`` keys it
    wrote), with the task that commits it once the transactions that join it are done (after
    waiting :data:`LINGER` seconds for more of them, while the store has company)."""
    group = CommitGroup(written)
    group.linger = LINGER if has_company(store) else 0.0
    # (in a context of its own: none of the ending transaction's context variables goes with it)
    group.committer = asyncio.get_running_loop().create_task(
        store._commit_group(group), context=contextvars.Context()
    )
    store._group = group
    return group


def end_group(store: SQLStore, group: CommitGroup, error: BaseException | None) -> None:
    """Commit ``group`` (or, given an ``error``, fail it: its transaction is gone) and tell its
    members; called holding the store's write lock, the group's transactions all ended."""
    store._group = None
    if group.members > 1:
        store._company = PATIENCE
    elif group.linger:
        store._company -= 1
    db = store._lite()
    if error is None:
        try:
            db.execute("COMMIT")
        except BaseException as failed:
            if db.in_transaction:
                db.execute("ROLLBACK")
            error = failed
        else:
            checkpoints = store._checkpoints
            if checkpoints is not None:
                checkpoints.committed()
    if error is not None:
        store._values.values.clear()  # (nothing uncommitted is remembered; forgotten anyway)
    group.settle(error)
