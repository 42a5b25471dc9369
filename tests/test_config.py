"""Configuration: defaults, validation messages naming keys, room settings precedence."""

from __future__ import annotations

import pytest

from coterie.errors import ConfigError
from coterie.framework.app import Coterie
from coterie.framework.config import HARD_MAX_DICE, Config, Limits, load_config, parse_config


def config_error(data: dict) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(data, "test.toml")
    message = str(caught.value)
    assert message.startswith("test.toml: invalid configuration\n")
    return message


# --- defaults -----------------------------------------------------------------------------------


def test_defaults():
    config = Config()
    assert config.plugins.enable == ["*"]
    assert config.default_variant == "revised"
    assert config.defaults.prefix == "!"
    assert config.limits.max_dice == 100
    assert config.limits.max_message_length == 2000
    assert config.limits.max_comment_length == 300
    assert config.limits.max_rolls_per_message == 10
    assert config.rooms == {} and config.adapters == {}
    assert config.enabled_adapters() == []
    assert parse_config({}) == config
    assert load_config(None) == config


async def test_default_room_settings(make_app):
    settings = await make_app().room_settings("test:anywhere")
    assert settings.variant == "revised"
    assert settings.prefix == "!"
    assert settings.default_difficulty is None
    assert dict(settings.house_rules) == {}


def test_enabled_adapters():
    config = parse_config(
        {"adapters": {"console": {"enabled": True}, "slack": {"enabled": False}, "matrix": {}}}
    )
    assert config.enabled_adapters() == ["console"]


# --- room settings: defaults < [rooms."platform:room"] < chat ------------------------------------


@pytest.fixture
def layered(make_app):
    return make_app(
        plugins={"enable": ["revised", "house-rules"]},
        defaults={
            "variant": "nobotch",
            "prefix": "!",
            "default_difficulty": 7,
            "house_rules": {"first_botch_free": True, "trying_again": False},
        },
        rooms={
            "test:r1": {
                "variant": "revised",
                "prefix": "?",
                "house_rules": {"first_botch_free": False},
            },
            "test:r3": {"default_difficulty": 8},
        },
    )


async def test_defaults_table_applies_to_every_room(layered):
    settings = await layered.room_settings("test:r2")
    assert (settings.variant, settings.prefix, settings.default_difficulty) == ("nobotch", "!", 7)
    assert dict(settings.house_rules) == {"first_botch_free": True, "trying_again": False}


async def test_room_table_overrides_defaults_key_by_key(layered):
    settings = await layered.room_settings("test:r1")
    assert (settings.variant, settings.prefix) == ("revised", "?")
    # [defaults]' difficulty 7 was set for nobotch; this room is configured for revised
    assert settings.default_difficulty is None
    assert dict(settings.house_rules) == {"first_botch_free": False, "trying_again": False}
    settings = await layered.room_settings("test:r3")
    assert (settings.variant, settings.default_difficulty) == ("nobotch", 8)


async def test_a_default_difficulty_stays_with_its_rule_set(layered, say):
    assert (await layered.room_settings("test:r2")).default_difficulty == 7
    await say(layered, "!variant revised", room="r2")
    assert (await layered.room_settings("test:r2")).default_difficulty is None
    await say(layered, "!variant nobotch", room="r2")
    assert (await layered.room_settings("test:r2")).default_difficulty == 7


async def test_room_key_includes_the_platform(layered):
    assert (await layered.room_settings("other:r1")).variant == "nobotch"


async def test_chat_change_overrides_the_room_table(layered, say):
    assert await say(layered, "!variant nobotch", room="r1") is None  # r1's prefix is ?
    plain = await say(layered, "?variant nobotch", room="r1")
    assert plain is not None and "now plays" in plain
    settings = await layered.room_settings("test:r1")
    assert settings.variant == "nobotch"
    assert settings.prefix == "?"  # the rest of the room's table still applies
    assert (await layered.room_settings("test:r2")).variant == "nobotch"
    await say(layered, "!variant revised", room="r2")
    assert (await layered.room_settings("test:r2")).variant == "revised"
    assert (await layered.room_settings("test:r3")).variant == "nobotch"  # other rooms untouched


async def test_chat_variant_is_used_for_rolls(make_app, say):
    app = make_app(plugins={"enable": ["revised", "house-rules"]}, faces=[1, 2, 3] * 2)
    assert "Botch!" in (await say(app, "!roll 3 6") or "")
    await say(app, "!variant nobotch")
    assert "Failure" in (await say(app, "!roll 3 6") or "")


async def test_unknown_variant_in_chat_is_an_error_and_changes_nothing(layered, send):
    reply = await send(layered, "!variant revisd", room="r2")
    assert reply is not None and reply.is_error
    assert (await layered.room_settings("test:r2")).variant == "nobotch"


async def test_stored_variant_that_is_no_longer_installed_falls_back(layered):
    await layered.update_room("test:r2", variant="gone")
    assert (await layered.room_settings("test:r2")).variant == "nobotch"


async def test_room_default_difficulty_is_used_by_rolls(make_app, say):
    app = make_app(rooms={"test:r1": {"default_difficulty": 9}})
    plain = await say(app, "!roll 3")
    assert plain is not None and "difficulty 9" in plain
    plain = await say(app, "!roll 3", room="r2")
    assert plain is not None and "difficulty 6" in plain


# --- validation: errors name the key ------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "line"),
    [
        ({"varient": 1}, "varient: unknown key"),
        ({"defaults": {"varient": "revised"}}, "defaults.varient: unknown key"),
        ({"limits": {"max_dice": 0}}, "limits.max_dice: "),
        ({"limits": {"max_dice": HARD_MAX_DICE + 1}}, "limits.max_dice: "),
        ({"limits": {"max_comment_length": -1}}, "limits.max_comment_length: "),
        ({"limits": {"max_message_length": "long"}}, "limits.max_message_length: "),
        ({"defaults": {"default_difficulty": 31}}, "defaults.default_difficulty: "),
        ({"rooms": {"slack:C1": {"prefix": "abc"}}}, 'rooms."slack:C1".prefix: '),
        ({"plugins": {"enable": "revised"}}, "plugins.enable: "),
        ({"log_level": "CHATTY"}, "log_level: "),
        ({"adapters": {"console": "on"}}, "adapters.console: "),
        (
            {"adapters": {"console": {"enabled": "yes"}}},
            "adapters.console.enabled: must be true or false",
        ),
    ],
)
def test_errors_name_the_key(data, line):
    message = config_error(data)
    assert any(row.startswith(line) or line in row for row in message.splitlines()[1:]), message


def test_every_problem_is_listed():
    message = config_error({"limits": {"max_dice": 0, "max_options": 0}, "colour": "red"})
    rows = message.splitlines()[1:]
    assert len(rows) == 3
    assert {row.split(":")[0] for row in rows} == {
        "limits.max_dice",
        "limits.max_options",
        "colour",
    }


@pytest.mark.parametrize(
    ("data", "suggestion"),
    [
        ({"limit": {}}, "limits"),
        ({"defaults": {"prefx": "!"}}, "prefix"),
        ({"limits": {"max_die": 5}}, "max_dice"),
        ({"plugins": {"enabled": ["*"]}}, "enable"),
    ],
)
def test_unknown_key_suggests_the_closest(data, suggestion):
    assert f"(did you mean '{suggestion}'?)" in config_error(data)


def test_unknown_key_without_close_match_lists_known_keys():
    message = config_error({"zzz": 1})
    assert "zzz: unknown key (known keys: plugins, defaults, rooms, adapters, limits" in message


def test_hard_cap_on_dice():
    assert parse_config({"limits": {"max_dice": HARD_MAX_DICE}}).limits.max_dice == 1000
    assert "1000" in config_error({"limits": {"max_dice": 1001}})


# --- prefixes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["!", "?", "!!", ".", "/", "$$$", "¡"])
def test_valid_prefixes(prefix):
    assert parse_config({"defaults": {"prefix": prefix}}).defaults.prefix == prefix


@pytest.mark.parametrize(
    ("prefix", "why"),
    [
        ("", "at least 1 character"),
        ("!!!!", "at most 3 characters"),
        ("r", "made of symbols"),
        ("! ", "made of symbols"),
        ("7", "made of symbols"),
        ("é", "made of symbols"),
    ],
)
def test_invalid_prefixes(prefix, why):
    message = config_error({"defaults": {"prefix": prefix}})
    assert "defaults.prefix:" in message
    assert why in message


async def test_room_prefix_is_used(make_app, say):
    app = make_app(rooms={"test:r1": {"prefix": "$$"}})
    assert await say(app, "!roll 3") is None
    assert "3 dice" in (await say(app, "$$roll 3") or "")
    assert "3 dice" in (await say(app, "!roll 3", room="r2") or "")


# --- secrets ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"adapters": {"slack": {"bot_token": "xoxb-1"}}}, "slack.bot_token"),
        ({"adapters": {"matrix": {"password": "hunter2"}}}, "matrix.password"),
        ({"adapters": {"slack": {"Signing_Secret": "s"}}}, "slack.Signing_Secret"),
        ({"adapters": {"slack": {"auth": {"token": "t"}}}}, "slack.auth.token"),
        ({"plugins": {"settings": {"dice-log": {"api_key": "k"}}}}, "dice-log.api_key"),
    ],
)
def test_secrets_are_refused(data, key):
    message = config_error(data)
    assert key in message
    assert "secrets are never read from the config file" in message
    assert f"{key.rsplit('.', 1)[-1]}_env instead" in message


def test_secret_names_in_env_keys_are_fine():
    config = parse_config(
        {
            "adapters": {"slack": {"bot_token_env": "SLACK_BOT_TOKEN", "enabled": False}},
            "plugins": {"settings": {"dice-log": {"api_key_env": "DICE_LOG_KEY"}}},
        }
    )
    assert config.adapters["slack"]["bot_token_env"] == "SLACK_BOT_TOKEN"


# --- config files -------------------------------------------------------------------------------


def test_example_config_validates_and_builds_an_app(root):
    config = load_config(root / "config" / "coterie.example.toml")
    builtin = ["revised", "v5", "d6", "laia", "crossover", "console", "slack", "telegram", "matrix"]
    assert config.plugins.enable == builtin
    assert config.enabled_adapters() == ["console"]
    app = Coterie(config)
    assert list(app.host.failures) == []
    assert set(app.variants) == {"revised", "v5", "d6", "laia", "crossover"}
    assert {"console", "slack", "telegram", "matrix"} <= set(app.adapter_classes)


def test_example_config_documents_every_key(root):
    """Every top-level key and every [limits] key appears in the example file."""
    text = (root / "config" / "coterie.example.toml").read_text(encoding="utf-8")
    for key in Config.model_fields:
        assert key in text, key
    for key in Limits.model_fields:
        assert f"{key} =" in text, key


def test_default_config_file_validates(root):
    config = load_config(root / "config" / "coterie.toml")
    app = Coterie(config)
    assert {"revised", "nobotch"} <= set(app.variants)


def test_not_toml(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[defaults\nvariant = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(path)


def test_unknown_variant_is_found_when_the_app_starts(make_app):
    with pytest.raises(ConfigError, match=r'rooms\."test:r9"\.variant: unknown variant .v20.'):
        make_app(rooms={"test:r9": {"variant": "v20"}})
    with pytest.raises(ConfigError, match=r"defaults\.variant: unknown variant 'v20'; installed: "):
        make_app(defaults={"variant": "v20"})


def test_the_default_rule_set_left_out_names_the_one_enabled(make_app):
    with pytest.raises(ConfigError, match=r'set \[defaults\] variant = "laia"\); installed: laia'):
        make_app(plugins={"enable": ["laia"]})


def test_enabled_adapter_must_be_loaded(make_app):
    with pytest.raises(ConfigError, match=r"adapters\.console: no such adapter"):
        make_app(adapters={"console": {"enabled": True}})
    app = make_app(
        plugins={"enable": ["revised", "console"]}, adapters={"console": {"enabled": True}}
    )
    assert app.config.enabled_adapters() == ["console"]


@pytest.mark.parametrize(
    ("table", "where"),
    [
        ({"limits": {"max_dice": True}}, "limits.max_dice: must be a whole number, not true"),
        (
            {"limits": {"max_options": False}},
            "limits.max_options: must be a whole number, not false",
        ),
        (
            {"limits": {"rate": {"user_per_minute": True}}},
            "limits.rate.user_per_minute: must be a number, not true",
        ),
        ({"ops": {"port": True}}, "ops.port: must be a whole number, not true"),
        ({"defaults": {"default_difficulty": True}}, "defaults.default_difficulty: must be"),
        ({"limits": {"max_dice": "10"}}, "limits.max_dice: Input should be a valid integer"),
        ({"limits": {"max_dice": 10.0}}, "limits.max_dice: Input should be a valid integer"),
    ],
)
def test_config_values_are_type_checked_strictly(table: dict, where: str) -> None:
    """`max_dice = true` used to be read as 1: a bool is not a number, nor a string a number."""
    with pytest.raises(ConfigError) as caught:
        parse_config(table)
    assert where in str(caught.value)


def test_adapter_tables_are_strict_too() -> None:
    from coterie_telegram.settings import TelegramSettings

    with pytest.raises(
        ConfigError, match=r"adapters\.telegram\.poll_timeout: must be a whole number"
    ):
        TelegramSettings.from_table({"poll_timeout": True})
    assert (
        parse_config({"limits": {"rate": {"user_per_minute": 20}}}).limits.rate.user_per_minute
        == 20.0
    )
