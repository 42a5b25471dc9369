"""``make dist`` in short (issue 22): the wheels build, pass ``twine check``, install into a clean
virtual environment, and there ``coterie --version`` answers and one roll is made."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest

from dist_check import check


@pytest.mark.timeout(900)
def test_the_wheels_build_check_install_and_roll(root, tmp_path):
    dist = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--wheel-dir",
            str(dist),
            str(root),
            str(root / "examples" / "coterie-house-rules"),
        ],
        check=True,
        timeout=600,
    )
    report = check(dist)
    import coterie

    assert report.endswith(f"twine OK, installs, coterie {coterie.__version__}, rolls")


def test_the_version_is_written_once(root):
    import coterie

    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "version" not in project and "version" in project["dynamic"]
    from importlib.metadata import version

    assert version("coterie") == coterie.__version__


def test_asyncpg_is_an_extra_and_every_package_is_typed(root):
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert not any(dep.startswith("asyncpg") for dep in project["dependencies"])
    assert any(dep.startswith("asyncpg") for dep in project["optional-dependencies"]["postgres"])
    assert not any("webhooks" in dep for dep in project["optional-dependencies"]["telegram"])
    packages = [
        *root.glob("plugins/coterie_*"),
        *root.glob("adapters/coterie_*"),
        root / "core" / "coterie",
        root / "examples/coterie-house-rules/coterie_house_rules",
    ]
    assert len(packages) == 11
    assert all((package / "py.typed").exists() for package in packages)
