"""The writer's tensor catalogue: ids are stable, and attributes learnt after `define` reach readers."""

from __future__ import annotations

import numpy as np

import trainguard
from trainguard.store import run_format
from trainguard.store.backends import open_store
from trainguard.store.writer import RankWriter, WriterConfig

K = len(run_format.STAT_COLUMNS)


def test_an_attribute_set_after_define_is_in_the_next_catalogue(file_uri: str) -> None:
    w = RankWriter(open_store(file_uri), run_id="r", config=WriterConfig(flush_every_steps=1))
    a = w.define("fc1.weight", collection="weights", shape=[4])
    b = w.define("fc2.weight", collection="weights", shape=[4])
    assert w.define("fc1.weight", collection="weights") == a, "the same name keeps its id"
    w.write_step(0, np.array([a, b], np.int32), np.ones((2, K), np.float32))
    w.flush()
    w.annotate(b, order=1)
    w.annotate(a, order=0)
    w.annotate(a, order=0)  # unchanged: nothing new to write
    w.write_step(1, np.array([a, b], np.int32), np.ones((2, K), np.float32))
    w.close()
    run = trainguard.open_run(file_uri)
    assert {t.name: t.order for t in run.tensors()} == {"fc1.weight": 0, "fc2.weight": 1}
    assert run.steps().tolist() == [0, 1]
    metas = [k for k in open_store(file_uri).list(run_format.rank_prefix(0)) if "meta-" in k]
    assert len(metas) == 2, "one catalogue before the first segment, one after the annotations"
