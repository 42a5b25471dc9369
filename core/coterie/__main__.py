"""``python -m coterie`` and the ``coterie`` command.

The command line is imported inside :func:`entry`, so that Ctrl-C while the interpreter is
still importing it (about half a second of a cold start) ends as cleanly as one later: one line,
exit status 0, no traceback."""

import sys


def entry() -> int:
    """The ``coterie`` console script: :func:`coterie.ops.cli.main`, Ctrl-C during its import
    included."""
    try:
        from coterie.ops.interrupts import install

        install()  # a Ctrl-C Python cannot raise (in a finalizer) is still heard
        from coterie.ops.cli import main
    except KeyboardInterrupt:
        sys.stderr.write("coterie: interrupted, stopped cleanly\n")
        return 0
    return main()


if __name__ == "__main__":
    sys.exit(entry())
