"""``coterie config check``: every problem of a config file at once — the TOML, each table, then
the file against the plugins it loads — one line each with its key path (and a suggestion)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coterie.errors import ConfigError
from coterie.framework.config import Config, Problems, check_config, read_toml

EXIT_CONFIG = 3


def config_check(path: str | None, make_app: Callable[[Config], Any]) -> int:
    """Check the file at ``path`` (``None``: the built-in defaults); print the problems on
    standard error and a summary on standard output. Exit status: 0 when all is well, 3 when the
    file has problems, 1 when only a plugin failed to load."""
    shown = path or "(built-in defaults)"
    problems = Problems()
    config: Config | None = Config()
    if path is not None:
        try:
            data = read_toml(path)
        except ConfigError as error:
            problems.add("", str(error).removeprefix(f"{path}: "))
            config = None
        else:
            config = check_config(data, problems)
            if config is not None:
                config._base_dir = Path(path).resolve().parent
    app = None
    if config is not None:
        with problems.gather():
            app = make_app(config)
    for line in problems.lines:
        sys.stderr.write(f"{shown}: {line}\n")
    if problems:
        sys.stderr.write(f"{len(problems)} problem(s) found\n")
        return EXIT_CONFIG
    assert config is not None and app is not None
    failures = app.host.failures
    for failure in failures:
        sys.stderr.write(f"{shown}: plugin {failure.plugin}: {failure.where}: {failure.error}\n")
    verdict = f"{len(failures)} plugin problem(s)" if failures else "OK"
    sys.stdout.write(
        f"{shown}: {verdict} — rule sets: "
        f"{', '.join(sorted(app.variants))}; default: {config.default_variant}; adapters: "
        f"{', '.join(config.enabled_adapters()) or 'none'}\n"
    )
    return 1 if failures else 0
