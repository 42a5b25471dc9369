"""coterie: Storyteller (World of Darkness) dice bots for every chat platform.

Plugins import :data:`hookimpl` from here::

    from coterie import hookimpl

    @hookimpl
    def coterie_variants():
        return [MyVariant()]
"""

from coterie.hookimpl import hookimpl

__all__ = ["__version__", "hookimpl"]
__version__ = "0.1.0"
