"""A serving process, once up, freezes what start-up made and collects its youngest objects less
often (``coterie.ops.lifecycle.settle_memory``)."""

from __future__ import annotations

import gc

from coterie.ops.lifecycle import YOUNG_GC_THRESHOLD, settle_memory


def test_start_up_objects_are_kept_and_the_young_collected_less_often() -> None:
    before = gc.get_threshold()
    gc.unfreeze()
    try:
        settle_memory()
        assert gc.get_threshold() == (YOUNG_GC_THRESHOLD, before[1], before[2])
        assert before[0] < YOUNG_GC_THRESHOLD
        assert gc.get_freeze_count() > 1000  # the modules and objects made so far
        # what is made afterwards is collected as before: a cycle dropped now goes
        cycle: list[object] = []
        cycle.append(cycle)
        del cycle
        assert gc.collect() >= 1
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
