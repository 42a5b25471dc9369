"""Play: coterie's built-in chat features, each registered as an ordinary plugin (entry points in
the ``coterie.builtins`` group) through the same hooks a third-party plugin uses — rolls, odds and
one-message teamwork, help and rule sets, rooms and sessions, extended actions, teamwork over
several messages, contests, and the roll log."""
