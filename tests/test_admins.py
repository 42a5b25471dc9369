"""Room administrators where the platform tells: they have a Storyteller's rights in a room."""

from __future__ import annotations

from typing import Any

from nio.rooms import MatrixRoom

from coterie_matrix.bot import ADMIN_POWER_LEVEL, _moderates
from coterie_slack.bot import DisplayNames


class UsersInfo:
    """A Web API client answering ``users.info`` from a table (DisplayNames' only call)."""

    def __init__(self, users: dict[str, dict[str, Any]]) -> None:
        self.users = users

    async def users_info(self, user: str) -> dict[str, Any]:
        return {"ok": True, "user": self.users[user]}


async def test_slack_workspace_admins_and_owners_are_room_admins() -> None:
    names = DisplayNames(
        UsersInfo(  # type: ignore[arg-type]
            {
                "U1": {"name": "a", "is_admin": True},
                "U2": {"name": "o", "is_owner": True},
                "U3": {"name": "p"},
            }
        )
    )
    for user in ("U1", "U2", "U3"):
        await names.get(user)
    assert names.admins == {"U1", "U2"}


def test_matrix_moderators_and_admins_are_room_admins() -> None:
    room = MatrixRoom("!r:example.org", "@bot:example.org")
    room.power_levels.users.update(
        {"@st:example.org": 100, "@mod:example.org": ADMIN_POWER_LEVEL, "@p:example.org": 10}
    )
    assert _moderates(room, "@st:example.org") and _moderates(room, "@mod:example.org")
    assert not _moderates(room, "@p:example.org") and not _moderates(room, "@new:example.org")
    assert not _moderates(object(), "@st:example.org")
