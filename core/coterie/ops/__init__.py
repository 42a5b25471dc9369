"""Operations: the ``coterie`` command line, logging, the ``/healthz`` and ``/metrics`` endpoint,
and the roll-log export."""
