"""The framework: the normalised message, the chat grammar, the rule-set interface, commands and
routing, hook specs and plugin loading, the app and its message path, config, limits and metrics.
It knows no game rule and no chat platform, and imports nothing from play, ops or any plugin."""
