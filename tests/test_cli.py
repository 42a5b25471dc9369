"""The ``coterie`` command line: ``roll`` (the JSON contract), ``plugins``, ``config check``."""

from __future__ import annotations

import io
import json
import subprocess

import pytest

from coterie.ops.cli import EXIT_CONFIG, EXIT_USAGE, main


def roll_json(capsys, *args: str) -> dict:
    code = main(["roll", *args, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert err == ""
    lines = out.splitlines()
    assert len(lines) == 1, out
    return json.loads(lines[0])


def fails(capsys, argv: list[str], code: int = EXIT_USAGE) -> str:
    """Run the CLI, expect exit ``code`` and nothing on stdout; return stderr."""
    assert main(argv) == code
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("coterie: ")
    return err


# --- coterie roll --json: the revised contract --------------------------------------------------


def test_json_failure_when_ones_cancel_every_success(capsys):
    data = roll_json(
        capsys, "--variant", "revised", "--pool", "5", "--difficulty", "8", "--faces", "9,1,1,8,1"
    )
    assert data["variant"] == "revised"
    assert data["faces"] == [9, 1, 1, 8, 1]
    assert data["outcome"] == "failure"
    assert data["successes"] == 0
    assert data["degree"] is None


def test_json_botch(capsys):
    data = roll_json(
        capsys, "--variant", "revised", "--pool", "5", "--difficulty", "8", "--faces", "1,3,4,3,7"
    )
    assert data["faces"] == [1, 3, 4, 3, 7]
    assert data["outcome"] == "botch"
    assert data["successes"] == 0
    assert data["degree"] is None


def test_json_success_with_degree(capsys):
    data = roll_json(
        capsys, "--variant", "revised", "--pool", "5", "--difficulty", "6", "--faces", "3,3,8,7,10"
    )
    assert data["faces"] == [3, 3, 8, 7, 10]
    assert data["outcome"] == "success"
    assert data["successes"] == 3
    assert isinstance(data["successes"], int)
    assert data["degree"] == "Complete"


def test_json_faces_are_ints_in_roll_order(capsys):
    data = roll_json(
        capsys, "--variant", "revised", "--pool", "5", "--faces", "10, 1, 7, 2, 6", "--seed", "3"
    )
    assert data["faces"] == [10, 1, 7, 2, 6]
    assert all(type(face) is int for face in data["faces"])


def test_json_willpower_adds_a_success_and_prevents_the_botch(capsys):
    data = roll_json(
        capsys,
        "--variant",
        "revised",
        "--pool",
        "5",
        "--difficulty",
        "6",
        "--faces",
        "3,3,8,7,10",
        "--willpower",
    )
    assert (data["outcome"], data["successes"], data["degree"]) == ("success", 4, "Exceptional")
    data = roll_json(
        capsys,
        "--variant",
        "revised",
        "--pool",
        "5",
        "--difficulty",
        "8",
        "--faces",
        "1,3,4,3,7",
        "--willpower",
    )
    assert (data["outcome"], data["successes"]) == ("success", 1)


def test_default_difficulty_is_six(capsys):
    data = roll_json(capsys, "--variant", "revised", "--pool", "3", "--faces", "6,5,1")
    assert data["outcome"] == "failure"  # the 6 succeeds, the 1 cancels it
    data = roll_json(capsys, "--variant", "revised", "--pool", "3", "--faces", "6,5,2")
    assert (data["outcome"], data["successes"]) == ("success", 1)


def test_seed_is_deterministic(capsys):
    args = ("--variant", "revised", "--pool", "12", "--seed", "42")
    first = roll_json(capsys, *args)
    second = roll_json(capsys, *args)
    assert first["faces"] == second["faces"]
    assert len(first["faces"]) == 12
    assert all(1 <= face <= 10 for face in first["faces"])
    other = roll_json(capsys, "--variant", "revised", "--pool", "12", "--seed", "43")
    assert other["faces"] != first["faces"]


def test_without_json_prints_the_human_reply(capsys):
    code = main(
        [
            "roll",
            "--variant",
            "revised",
            "--pool",
            "5",
            "--difficulty",
            "6",
            "--faces",
            "3,3,8,7,10",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert "3 3 8 7 10" in out
    assert "3 successes" in out and "Complete" in out
    assert not out.lstrip().startswith("{")


def test_nobotch_variant_from_the_example_distribution(capsys):
    data = roll_json(
        capsys, "--variant", "nobotch", "--pool", "5", "--difficulty", "8", "--faces", "1,3,4,3,7"
    )
    assert data["variant"] == "nobotch"
    assert data["outcome"] == "failure"
    assert data["successes"] == 0


# --- coterie roll: errors -----------------------------------------------------------------------


@pytest.mark.parametrize("faces", ["3,3,8,7", "3,3,8,7,10,1", ""])
def test_face_count_must_match_the_pool(capsys, faces):
    err = fails(capsys, ["roll", "--variant", "revised", "--pool", "5", "--faces", faces, "--json"])
    assert "--faces" in err
    assert "5 dice" in err


@pytest.mark.parametrize(("faces", "expected"), [("0,1,1,1,1", "cannot show 0"), ("a,b", "a,b")])
def test_bad_faces(capsys, faces, expected):
    err = fails(capsys, ["roll", "--variant", "revised", "--pool", "5", "--faces", faces, "--json"])
    assert expected in err


def test_specialty_is_not_a_revised_option(capsys):
    err = fails(capsys, ["roll", "--variant", "revised", "--pool", "5", "--specialty", "--json"])
    assert "specialty" in err and "revised" in err


def test_unknown_variant(capsys):
    err = fails(capsys, ["roll", "--variant", "nosuch", "--pool", "5", "--json"])
    assert "'nosuch'" in err
    assert "revised" in err  # the installed ones are named


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--pool", "0"], "pool of 0"),
        (["--pool", "101"], "at most 100"),
        (["--pool", "5", "--difficulty", "11"], "between 2 and 10"),
        (["--pool", "5", "--difficulty", "1"], "between 2 and 10"),
    ],
)
def test_roll_argument_errors(capsys, args, expected):
    err = fails(capsys, ["roll", "--variant", "revised", *args, "--json"])
    assert expected in err


def test_variant_not_enabled_in_the_config_is_unknown(capsys, root):
    err = fails(
        capsys,
        [
            "roll",
            "--config",
            str(root / "config" / "coterie.example.toml"),
            "--variant",
            "nobotch",
            "--pool",
            "5",
        ],
    )
    assert "'nobotch'" in err


# --- a real process -----------------------------------------------------------------------------


def test_roll_json_in_a_real_process(coterie_cli, cli_env, root):
    done = subprocess.run(
        [*coterie_cli, "roll", "--variant", "revised", "--pool", "5", "--difficulty", "8"]
        + ["--faces", "9,1,1,8,1", "--json"],
        capture_output=True,
        text=True,
        env=cli_env,
        cwd=root,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["faces"] == [9, 1, 1, 8, 1]
    assert (data["outcome"], data["successes"], data["degree"]) == ("failure", 0, None)


def test_face_count_mismatch_in_a_real_process(coterie_cli, cli_env, root):
    done = subprocess.run(
        [*coterie_cli, "roll", "--variant", "revised", "--pool", "5", "--faces", "1,2", "--json"],
        capture_output=True,
        text=True,
        env=cli_env,
        cwd=root,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "--faces: the faces ran out: this roll needs at least 5 dice, but 2" in done.stderr
    assert "Traceback" not in done.stderr


# --- coterie plugins ----------------------------------------------------------------------------


def test_plugins_lists_installed_and_enabled(capsys, root):
    assert main(["plugins", "--config", str(root / "config" / "coterie.example.toml")]) == 0
    out = capsys.readouterr().out
    installed, rest = out.split("Rule sets:")
    lines = {line.split()[0]: line for line in installed.splitlines() if line.startswith("  ")}
    assert "enabled" in lines["revised"] and "not enabled" not in lines["revised"]
    assert "enabled" in lines["console"] and "not enabled" not in lines["console"]
    assert "not enabled" in lines["house-rules"]
    assert "coterie_house_rules" in lines["house-rules"]
    assert "nobotch" not in rest  # its rule set is not loaded
    assert "!roll" in rest and "Vampire: the Masquerade, Revised (default)" in rest


def test_plugins_with_everything_enabled(capsys, root):
    assert main(["plugins", "--config", str(root / "config" / "coterie.toml")]) == 0
    out = capsys.readouterr().out
    assert "not enabled" not in out.split("Rule sets:")[0]
    assert "nobotch" in out
    assert "Problems:" not in out


# --- coterie config check -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["coterie.toml", "coterie.example.toml"])
def test_config_check_shipped_files(capsys, root, name):
    assert main(["config", "check", str(root / "config" / name)]) == 0
    out, err = capsys.readouterr()
    assert "OK" in out
    assert err == ""


def test_config_check_in_a_real_process(coterie_cli, cli_env, root):
    done = subprocess.run(
        [*coterie_cli, "config", "check", "config/coterie.toml"],
        capture_output=True,
        text=True,
        env=cli_env,
        cwd=root,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "OK" in done.stdout


@pytest.mark.parametrize(
    ("toml", "named"),
    [
        ("[defaults]\nvarient = 'revised'\n", "defaults.varient"),
        ("colour = 'red'\n", "colour"),
        ("[limits]\nmax_dice = 5000\n", "limits.max_dice"),
        ("[limits]\nmax_dice = 'lots'\n", "limits.max_dice"),
        ("[defaults]\nprefix = 'ab'\n", "defaults.prefix"),
        ("log_level = 'LOUD'\n", "log_level"),
        ("[adapters.console]\nenabled = true\ntoken = 'x'\n", "console.token"),
        ("[adapters.console]\nenabled = 'yes'\n", "console.enabled"),
        ("[plugins.settings.dice-log]\napi_key = 'x'\n", "dice-log.api_key"),
        ("[defaults]\nvariant = 'v20'\n", "defaults.variant"),
        ("[rooms.'slack:C1']\nvariant = 'v20'\n", 'rooms."slack:C1".variant'),
        ("[plugins]\nenable = ['revised', 'nosuch']\n", "plugins.enable"),
        ("[plugins]\nenable = ['revised']\n[adapters.console]\nenabled = true\n", "console"),
        ("[limits\n", "not valid TOML"),
    ],
)
def test_config_check_broken_file_names_the_key(capsys, tmp_path, toml, named):
    path = tmp_path / "broken.toml"
    path.write_text(toml, encoding="utf-8")
    code = main(["config", "check", str(path)])
    out, err = capsys.readouterr()
    assert code == EXIT_CONFIG
    assert out == ""
    assert named in err, err
    assert "Traceback" not in err


def test_config_check_secret_message_says_where_secrets_go(capsys, tmp_path):
    path = tmp_path / "secret.toml"
    path.write_text("[adapters.console]\nenabled = true\ntoken = 'x'\n", encoding="utf-8")
    assert main(["config", "check", str(path)]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "adapters" in err
    assert "token_env" in err
    assert "'x'" not in err  # the secret itself is never echoed


def test_config_check_unknown_plugin_lists_installed(capsys, tmp_path):
    path = tmp_path / "plugins.toml"
    path.write_text("[plugins]\nenable = ['revised', 'house-rule']\n", encoding="utf-8")
    assert main(["config", "check", str(path)]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "'house-rule'" in err
    for name in ("console", "house-rules", "revised"):
        assert name in err


def test_config_check_missing_file(capsys, tmp_path):
    assert main(["config", "check", str(tmp_path / "nope.toml")]) == EXIT_CONFIG
    assert "cannot read" in capsys.readouterr().err


def test_config_from_environment_variable(capsys, tmp_path, monkeypatch):
    path = tmp_path / "env.toml"
    path.write_text("[limits]\nmax_dice = 3\n", encoding="utf-8")
    monkeypatch.setenv("COTERIE_CONFIG", str(path))
    err = fails(capsys, ["roll", "--variant", "revised", "--pool", "4", "--json"])
    assert "at most 3" in err


# --- chat --variant -------------------------------------------------------------------------------


def test_chat_variant_overrides_the_rooms_configured_variant(capsys, tmp_path, monkeypatch):
    config = tmp_path / "c.toml"
    config.write_text(
        '[plugins]\nenable = ["*"]\n[rooms."console:table"]\nvariant = "revised"\n'
        "[adapters.console]\nenabled = true\n",
        encoding="utf-8",
    )
    monkeypatch.setattr("sys.stdin", io.StringIO("!variant\n"))
    assert main(["chat", "--config", str(config), "--variant", "nobotch"]) == 0
    out = capsys.readouterr().out
    assert "This room plays Vampire: the Masquerade, Revised — house rule: no botches." in out


def test_chat_unknown_variant_is_a_usage_error(capsys):
    assert main(["chat", "--variant", "nope"]) == 2
    err = capsys.readouterr().err
    assert "--variant: there is no rule set 'nope'" in err and "revised" in err


def test_config_check_reports_every_problem_at_once(capsys, tmp_path):
    path = tmp_path / "many.toml"
    path.write_text(
        'log_levle = "INFO"\n'
        '[defaults]\nvariant = "revsed"\nprefx = "!"\n'
        '[rooms.table]\nvariant = "v5"\n'
        '[rooms."slak:C1"]\nvariant = "v5"\n'
        "[limits]\nmax_dice = 0\n",
        encoding="utf-8",
    )
    assert main(["config", "check", str(path)]) == EXIT_CONFIG
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    expected = [
        "log_levle: unknown key (did you mean 'log_level'?)",
        "defaults.prefx: unknown key (did you mean 'prefix'?)",
        "limits.max_dice: ",
        'rooms.table: a room is named "platform:room" (did you mean [rooms."console:table"]?)',
        "rooms.\"slak:C1\": no adapter 'slak' (did you mean 'slack'?)",
        # found although the same table had another problem
        "defaults.variant: unknown variant 'revsed' (did you mean 'revised'?)",
    ]
    for text in expected:
        assert any(f"{path}: {text}" in line for line in lines), (text, err)
    assert lines[-1] == f"{len(expected)} problem(s) found"


def test_config_problems_are_reusable(tmp_path):
    from coterie.framework.config import Problems, check_config, validate_table
    from coterie.framework.config import RoomConfig as Model

    problems = Problems()
    config = check_config({"defaults": {"prefx": "!", "variant": "v5"}}, problems)
    assert config is not None and config.defaults.variant == "v5"
    with problems.gather():  # a plugin's own table, validated by the same rules
        validate_table(Model, {"storytelers": []}, "plugins.settings.mine")
    assert problems.lines == [
        "defaults.prefx: unknown key (did you mean 'prefix'?)",
        "plugins.settings.mine.storytelers: unknown key (did you mean 'storytellers'?)",
    ]


def test_completion_script_completes_subcommands_and_options(coterie_cli, cli_env, tmp_path):
    script = subprocess.run(
        [*coterie_cli, "completion", "bash"],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=60,
    ).stdout
    (tmp_path / "c.sh").write_text(script, encoding="utf-8")
    probe = (
        f"source {tmp_path / 'c.sh'}; "
        'COMP_WORDS=(coterie con); COMP_CWORD=1; _coterie; echo "${COMPREPLY[@]}"; '
        'COMP_WORDS=(coterie config ""); COMP_CWORD=2; _coterie; echo "${COMPREPLY[@]}"; '
        'COMP_WORDS=(coterie roll --var); COMP_CWORD=2; _coterie; echo "${COMPREPLY[@]}"'
    )
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.stdout.splitlines() == ["config", "--help check", "--variant"], out
