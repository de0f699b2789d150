"""`collapsed_lookup`: an embedding table whose every lookup reads the same row.

An `nn.Embedding` (or `EmbeddingBag`) table's gradient is non-zero only in the rows the batch looked up. A batch
of many ids spread over a table touches many rows; a batch whose ids all collapsed to one value touches one. The
evidence is the table's gradient record (`grad/<table>`: `count`, `zero`, `nan`, `inf`) against its shape in the
catalogue: at most one row's worth of non-zero elements (`0 < non-zero <= row width`) at each of `views`
saved steps in a row. Ids that collapse (a hash taken modulo 1, an id column overwritten with a constant, a
vocabulary lookup that maps every token to the unknown token) make the table one learned constant: the model
learns nothing from that input, and the loss and the weights look ordinary.

Significance comes from the repetition, not from a threshold: a healthy table that a batch reads through two
or more rows with probability q shows one row at `views` saved steps in a row with probability (1 - q)^views. On
the detection suites the healthy tables (296 runs, 492 table records) read one row at most at one saved step
in a row (a knowledge-graph model's 6-row relation table, whose batches of triples sometimes share one
relation); the hash taken modulo 1 reads one row at every saved step. Saved steps at which the table got no
gradient at all (a frozen table, a loss that passed nothing back) or a non-finite one say nothing either way and
leave the count as it is. Tables of one row are not judged (there is nothing to collapse).

Not told apart: batches grouped by design so that each reads one id (one speaker or one user a batch) read one
row at every step too, a different one each time; the records (aggregate statistics) cannot say which row. The
finding names what it saw and what to check. Reported once, for the tables that reached the count at that step.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from trainguard.api.enums import Action, Collection, RuleCategory
from trainguard.rules import base, shared
from trainguard.rules.step_view import COL, StepView

_GRAD = "grad/"
_GRADIENTS = (Collection.GRADIENTS.value,)


class CollapsedLookup(base.Rule):
    name = "collapsed_lookup"
    category = RuleCategory.PREDICTIONS
    default_action = Action.NOTIFY
    training_views_only = True
    needs = "embedding table gradients"
    summary = (
        "An embedding table whose gradient is non-zero in at most one row at saved step after saved step: every "
        "lookup reads the same row, the ids reaching it have collapsed to one value."
    )
    hint = (
        "check the ids fed to the table: a hash or bucket count of 1 (x % 1), an id column overwritten with a "
        "constant, a vocabulary that maps every token to the unknown token, ids cast or clipped to 0"
    )

    class Params(base.Params):
        views: int = Field(
            default=5,
            ge=2,
            description="Saved steps in a row at which the table's gradient must be non-zero in at most one row "
            "(healthy tables on the detection suites: at most 1 in a row).",
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.tables: dict[str, tuple[int, int]] = {}
        """Per table parameter read so far: (rows, row width), from the catalogue."""
        self.streak: dict[str, int] = {}
        """Per table: saved steps in a row with at most one row's worth of non-zero gradient."""
        self.reported: set[str] = set()
        self._layout: tuple[tuple[str, ...] | None, list[tuple[str, int]]] = (None, [])
        """The tensor names of the last layout seen and its (table, gradient row) pairs."""

    def _learn_tables(self, view: StepView) -> None:
        for m in view.meta:
            if m.trainable and m.module_type in shared.LOOKUP_TABLES and len(m.shape) == 2 and m.shape[0] > 1:
                self.tables.setdefault(m.name, (int(m.shape[0]), int(m.shape[1])))

    def _gradient_rows(self, view: StepView) -> list[tuple[str, int]]:
        """(table, row of its gradient) for the tables whose gradient this view records: read from the catalogue
        once per layout (the tensor names), not at every view."""
        names, pairs = self._layout
        if names is not view.names and names != view.names:
            self._learn_tables(view)
            pairs = []
            for i in view.rows(collections=_GRADIENTS).tolist():
                name = view.names[i]
                if name.startswith(_GRAD) and name[len(_GRAD) :] in self.tables:
                    pairs.append((name[len(_GRAD) :], i))
            self._layout = (view.names, pairs)
        return pairs

    def has_input(self, view: StepView) -> bool:
        return bool(self._gradient_rows(view))

    def check(self, view: StepView) -> list[base.Finding]:
        p: CollapsedLookup.Params = self.params  # type: ignore[assignment]
        hits: list[tuple[str, float, float]] = []
        for table, i in self._gradient_rows(view):
            row = view.stats[i]
            count, zero, bad = row[COL["count"]], row[COL["zero"]], row[COL["nan"]] + row[COL["inf"]]
            nonzero = count - zero - bad
            if not (bad == 0 and nonzero > 0):
                continue  # no gradient reached the table, or a non-finite one: no evidence either way
            width = self.tables[table][1]
            self.streak[table] = self.streak.get(table, 0) + 1 if nonzero <= width else 0
            if self.streak[table] >= p.views and table not in self.reported:
                hits.append((table, float(nonzero), float(count)))
        if not hits:
            return []
        self.reported.update(t for t, _, _ in hits)
        table, nonzero, count = hits[0]
        rows, width = self.tables[table]
        others = f" (and {', '.join(t for t, _, _ in hits[1:])})" if len(hits) > 1 else ""
        msg = (
            f"{table}{others}: embedding table of {rows} rows of width {width} whose gradient was non-zero in at most "
            f"one row at each of the last {p.views} saved steps {self.where(view)} ({base.fmt(nonzero)} of "
            f"{base.fmt(count)} gradient elements non-zero now): every lookup in those batches read the same row, "
            "so the ids reaching the table have collapsed to one value and the model learns nothing from them "
            "(batches grouped by design to one id each read one row too)"
        )
        return [self.finding(view, msg, tensor=table, value=float(p.views), threshold=float(p.views))]

    def get_state(self) -> dict[str, Any]:
        return {"streak": dict(self.streak), "reported": sorted(self.reported)}

    def set_state(self, state: dict[str, Any]) -> None:
        self.streak = {k: int(v) for k, v in state.get("streak", {}).items()}
        self.reported = {str(t) for t in state.get("reported", [])}
