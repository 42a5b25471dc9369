"""Start-up says only what matters (issue 22): Alembic's INFO lines only when something is
migrated (or with -v); without a config file the data directory is the user's data directory."""

from __future__ import annotations

import logging
from pathlib import Path

from coterie.framework.config import Config, parse_config
from coterie.storage.migrate import open_store


async def alembic_lines(config, caplog, **options) -> list[str]:
    caplog.clear()
    with caplog.at_level(logging.INFO):
        store = await open_store(config, **options)
        await store.close()
    return [r.getMessage() for r in caplog.records if r.name.startswith("alembic")]


async def test_alembic_speaks_only_when_it_migrates(tmp_path, caplog, monkeypatch):
    monkeypatch.delenv("COTERIE_DATABASE_URL", raising=False)
    config = parse_config({"state": {"url": f"sqlite+aiosqlite:///{tmp_path / 's.db'}"}})
    first = await alembic_lines(config, caplog)
    assert any("Running upgrade" in line for line in first), first  # a migration: said
    assert await alembic_lines(config, caplog) == []  # nothing to migrate: silent
    assert await alembic_lines(config, caplog, verbose=True)  # -v: Alembic's own lines


def test_without_a_config_the_data_dir_is_the_user_data_dir(monkeypatch):
    monkeypatch.delenv("COTERIE_DATABASE_URL", raising=False)
    import platformdirs

    monkeypatch.delenv("COTERIE_DATA_DIR", raising=False)
    expected = Path(platformdirs.user_data_dir("coterie", appauthor=False))
    assert Config().data_path() == expected
    assert str(expected) in Config().database_url()
    monkeypatch.setenv("COTERIE_DATA_DIR", "/tmp/elsewhere")
    assert Config().data_path() == Path("/tmp/elsewhere")


def test_with_a_config_its_data_dir_holds_everything(tmp_path, monkeypatch):
    monkeypatch.delenv("COTERIE_DATABASE_URL", raising=False)
    from coterie.framework.config import load_config

    path = tmp_path / "c.toml"
    path.write_text('data_dir = "state"\n', encoding="utf-8")
    config = load_config(path)
    assert config.data_path() == tmp_path / "state"
    assert str(tmp_path / "state" / "coterie.db") in config.database_url()


async def test_chart_images_land_in_the_data_dir(tmp_path):
    import io

    from coterie.framework.app import Coterie
    from coterie.framework.config import load_config
    from coterie_console import ConsoleAdapter

    path = tmp_path / "c.toml"
    path.write_text('data_dir = "state"\n[plugins]\nenable = ["revised", "console"]\n')
    app = Coterie(load_config(path))
    out = io.StringIO()
    await ConsoleAdapter(
        app, {"user": "a"}, stdin=io.StringIO("!odds 5 6 chart\n"), stdout=out
    ).run()
    assert f"(image saved to {tmp_path / 'state' / 'images'}" in out.getvalue(), out.getvalue()
