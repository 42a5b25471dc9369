"""Rendering: the neutral reply tree (:mod:`coterie.render.elements`) and the encoders that turn it
into plain text and Markdown (:mod:`coterie.render.encode`). Adapters subclass the encoders for
their platform's markup. Imports nothing else of coterie."""
