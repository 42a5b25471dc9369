"""State storage: the store protocol, the roll record and the memory store
(:mod:`coterie.storage.state`), the SQL store on SQLite or PostgreSQL (:mod:`coterie.storage.sql`)
and its Alembic migrations."""
