"""The interactive console completes command names, then the room's Trait names."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from coterie.framework.app import Coterie
from coterie_console.complete import candidates, completer, template_names

ALL = {"plugins": {"enable": ["revised", "v5", "d6"]}}


@pytest.fixture
def app(make_app: Callable[..., Coterie]) -> Coterie:
    return make_app(**ALL)


@pytest.fixture
def v5_traits(app: Coterie) -> list[str]:
    return template_names(app.variants["v5"].character_template)


def test_the_first_word_completes_to_commands() -> None:
    assert candidates("!ro", ["!roll", "!reveal", "!odds"], ["Wits"]) == ["!roll"]
    assert candidates("/a", ["/as", "/quit"], []) == ["/as"]


def test_later_words_complete_to_trait_names_after_a_space_or_a_plus(v5_traits: list[str]) -> None:
    assert "Wits" in candidates("!roll wi", ["!roll"], v5_traits)
    assert candidates("!roll Wits+Aw", ["!roll"], v5_traits) == ["Awareness"]
    assert candidates("!roll Wits+Awareness-", ["!roll"], v5_traits) == []
    assert candidates("!roll ", ["!roll"], v5_traits) == []


def test_each_rule_set_completes_its_own_traits(app: Coterie) -> None:
    revised = template_names(app.variants["revised"].character_template)
    v5 = template_names(app.variants["v5"].character_template)
    assert "Appearance" in revised and "Appearance" not in v5
    assert "Composure" in v5 and "Composure" not in revised


def test_the_prompt_toolkit_completer_replaces_only_the_word_before_the_cursor(
    v5_traits: list[str],
) -> None:
    text = "!roll Wits+Awa"
    found = list(
        completer(["!roll"], v5_traits).get_completions(
            Document(text, len(text)), CompleteEvent(completion_requested=True)
        )
    )
    assert [(c.text, c.start_position) for c in found] == [("Awareness", -3)]


async def test_completion_follows_the_rooms_rule_set_and_the_speakers_own_traits(
    app: Coterie,
) -> None:
    import io
    from types import SimpleNamespace

    from coterie_console import ConsoleAdapter

    adapter = ConsoleAdapter(
        app, {"user": "ana", "storyteller": "ana"}, stdin=io.StringIO(), stdout=io.StringIO()
    )
    commands, traits = await adapter.completion_words()
    first = app.config.defaults.variant
    assert traits == template_names(app.variants[first].character_template)
    # the prompt the session was made with, refreshed before each later prompt
    shown = completer(commands, traits)

    async def prompt_async(prompt: str) -> str:
        return "!noop"

    adapter._session = SimpleNamespace(completer=shown, prompt_async=prompt_async)
    other = "v5" if first != "v5" else "revised"
    await adapter.say(f"!variant {other}")
    await adapter._prompt()
    assert shown.traits[: len(template_names(app.variants[other].character_template))] == (
        template_names(app.variants[other].character_template)
    )
    assert candidates("!roll Compo", [], shown.traits) == (["Composure"] if other == "v5" else [])
    # a custom Trait of the speaker's active character, once added
    assert candidates("!roll Obe", [], shown.traits) == []
    await adapter.say("!char new Lise")
    await adapter.say("!char add Disciplines Obeah 2")
    await adapter._prompt()
    assert candidates("!roll Strength+Obe", [], shown.traits) == ["Obeah"]
    # someone else's sheet is not the speaker's
    adapter.user = "bo"
    await adapter._prompt()
    assert candidates("!roll Obe", [], shown.traits) == []
