"""Checkpointer: saving the evaluator's state after each segment and restoring it when it restarts.

`Checkpointer` loads the checkpoint of the ranks an evaluator follows (`checkpoint.py` holds the
document and its one-PUT write), hands each rank's saved position to the tracks as they open, and
snapshots what it needs after each evaluated segment: per rank the last key and step, each rule
instance's state, the rank's statuses and the first step held for sharded tensors' other parts;
the reported statuses, kept findings and the stop flag. A rule whose state is not JSON is dropped
from the checkpoint (said once) and restarts fresh: it must not stop checkpoints for the others.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from trainguard.sidecar import checkpoint as ckpt
from trainguard.sidecar._tracks import RankTrack
from trainguard.sidecar.config import CompiledRule
from trainguard.sidecar.shard_merge import ShardMerger
from trainguard.sidecar.verdicts import Verdicts
from trainguard.store.backends import Store

log = logging.getLogger(__name__)


class Checkpointer:
    """Loads and writes the checkpoint of one evaluator (its key is that of the ranks it follows)."""

    def __init__(
        self, store: Store, followed: tuple[int, ...] | None, lock: threading.RLock, *, enabled: bool
    ) -> None:
        """`enabled`: whether a checkpoint is restored on open and written as the evaluation goes."""
        self._store = store
        self._key = ckpt.key_for(followed)
        self._lock = lock
        self.enabled = enabled
        self.saved: ckpt.EvaluatorState | None = None
        """The checkpoint restored on open, if any."""
        self._unsavable: set[str] = set()

    def load(self) -> ckpt.EvaluatorState | None:
        """Read the checkpoint (when enabled); None when there is none or it cannot be used."""
        self.saved = ckpt.load(self._store, self._key) if self.enabled else None
        return self.saved

    def position(self, rank: int) -> ckpt.RankPosition | None:
        """Where the restored checkpoint left `rank`, if it holds it."""
        return self.saved.ranks.get(str(rank)) if self.saved else None

    def save(
        self,
        tracks: Mapping[int, RankTrack],
        compiled: list[CompiledRule],
        verdicts: Verdicts,
        merger: ShardMerger,
    ) -> None:
        """Write the checkpoint now (also when not enabled: the caller asked for it)."""
        with self._lock:
            state = ckpt.EvaluatorState(
                ranks={
                    str(r): ckpt.RankPosition(
                        last_key=getattr(t.source, "last_key", None),
                        last_step=t.last_step,
                        ended=t.ended,
                        rules={
                            c.name: rule.state_dict()
                            for c, rule in zip(compiled, t.rules)
                            if c.name not in self._unsavable
                        },
                        statuses=verdicts.rank_docs(r),
                        held_from=merger.held_from(r),
                    )
                    for r, t in tracks.items()
                },
                statuses=verdicts.status_docs(),
                findings=verdicts.finding_docs(),
                stop_requested=verdicts.stop_requested,
            )
        try:
            ckpt.save(self._store, self._key, state)
        except (TypeError, ValueError):
            # A rule whose state is not JSON must not stop checkpoints for the others: drop it, say so once.
            for position in state.ranks.values():
                for name, rule_state in list(position.rules.items()):
                    why = ckpt.unsavable(rule_state)
                    if why is not None:
                        log.error(
                            "trainguard: the state of rule %s cannot be checkpointed (%s); it restarts fresh",
                            name,
                            why,
                        )
                        self._unsavable.add(name)
                        del position.rules[name]
            ckpt.save(self._store, self._key, state)
