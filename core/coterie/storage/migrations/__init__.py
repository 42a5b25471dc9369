"""coterie's Alembic migrations (``coterie db upgrade``; applied on start by ``open_store``)."""
