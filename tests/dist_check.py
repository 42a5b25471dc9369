"""Check built wheels as a user would meet them (``make dist`` runs this; so does
``tests/test_dist.py``): ``twine check`` passes, the coterie wheel installs into a clean virtual
environment with no project checkout on its path, and there ``coterie --version`` answers and one
roll is made. Every package of the wheel carries ``py.typed``.

Usage: ``python tests/dist_check.py DIST_DIR``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PACKAGES = (
    "coterie",
    "coterie_revised",
    "coterie_v5",
    "coterie_d6",
    "coterie_laia",
    "coterie_crossover",
    "coterie_console",
    "coterie_slack",
    "coterie_telegram",
    "coterie_matrix",
)


def run(*argv: str, cwd: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COTERIE_CONFIG")}
    done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(argv)}\n{done.stdout}\n{done.stderr}")
    return done.stdout


def check(dist: Path) -> str:
    wheels = sorted(dist.glob("*.whl"))
    [core] = [w for w in wheels if w.name.startswith("coterie-")]
    names = set(zipfile.ZipFile(core).namelist())
    missing = [p for p in PACKAGES if f"{p}/py.typed" not in names]
    if missing:
        raise SystemExit(f"{core.name}: no py.typed in {missing}")
    twine = Path(sys.executable).with_name("twine")
    run(str(twine), "check", "--strict", *map(str, wheels))
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"
        run(sys.executable, "-m", "venv", str(venv))
        pip = venv / "bin" / "pip"
        run(str(pip), "install", "--quiet", "--disable-pip-version-check", str(core))
        coterie = str(venv / "bin" / "coterie")
        version = run(coterie, "--version", cwd=tmp).strip()
        faces = "9,1,1,8,1"
        args = ["roll", "--variant", "revised", "--pool", "5", "--difficulty", "8"]
        rolled = json.loads(run(coterie, *args, "--faces", faces, "--json", cwd=tmp))
        if rolled["faces"] != [9, 1, 1, 8, 1] or rolled["outcome"] != "failure":
            raise SystemExit(f"unexpected roll from the installed wheel: {rolled}")
        where = run(str(venv / "bin" / "python"), "-c", "import coterie; print(coterie.__file__)")
        if not where.startswith(str(venv)):
            raise SystemExit(f"coterie was imported from {where}, not the clean venv")
    return f"{', '.join(w.name for w in wheels)}: twine OK, installs, {version}, rolls"


if __name__ == "__main__":
    print(check(Path(sys.argv[1] if len(sys.argv) > 1 else "dist")))
