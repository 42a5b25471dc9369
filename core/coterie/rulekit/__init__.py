"""The rule-set kit: chat building blocks that rule-set plugins share on top of the framework —
pool and difficulty slots and their checks, the resisted verdict, the extended-action and contest
helpers (:mod:`coterie.rulekit.pools`), and how odds are answered in chat and drawn as charts
(:mod:`coterie.rulekit.odds`)."""
