"""`open_run(uri)`: opens the run at a root, whatever wrote it.

Ours is recognised by `run.json` or `rank-NNNNN/` at the root; any other format is asked in the
order `foreign.FORMATS` registers them (smdebug: `index/` and `events/`; TensorBoard: `*tfevents*`
files). Reading is left to `reader.Run` and the sources; this module only decides which source a
root needs. Foreign readers are imported only when a root is not ours, so `import trainguard`
stays light.
"""

from __future__ import annotations

from trainguard.store import backends, errors, run_format
from trainguard.store.backends import Store, open_store
from trainguard.store.reader import Run
from trainguard.store.source import RankSource, load_json_doc

OURS = "run.json or rank-NNNNN/ (TrainGuard)"
"""What a root of ours holds, as the error for an unrecognised root lists it."""


def list_ranks(store: Store) -> list[int]:
    """Return the ranks that have a `rank-NNNNN/` folder, listing only names that start `rank-`."""
    found = map(run_format.parse_rank_prefix, store.list(run_format.RANK_NAME_PREFIX, delimiter="/"))
    return sorted(r for r in found if r is not None)


def read_run_info(store: Store) -> run_format.RunInfo | None:
    """Return `run.json`, or None when there is none."""
    try:
        doc = load_json_doc(store, run_format.RUN_INFO_KEY, run_format.RunInfo)
    except errors.NotFound:
        return None
    assert isinstance(doc, run_format.RunInfo)
    return doc


def is_ours(top: list[str]) -> bool:
    """Whether a root's top-level listing is one of our runs."""
    return run_format.RUN_INFO_KEY in top or any(run_format.parse_rank_prefix(e) is not None for e in top)


def open_run(uri: str, *, store: Store | None = None, wait: bool = False) -> Run:
    """Open a run at `uri` in our format, an smdebug output directory, or a TensorBoard log directory.

    With `wait=True` a root that holds nothing yet is opened as an empty TrainGuard run (rank 0),
    so a follower can start before the writer; otherwise an empty root raises `NotFound`.
    """
    from trainguard.store import foreign

    store = store or open_store(uri)
    # Only the names our format uses are listed (`rank-`, `run.json`), and foreign formats are probed with
    # bounded listings, so a root that also holds many unrelated objects opens in a few requests.
    ranks = list_ranks(store)
    info = read_run_info(store)
    if info is not None or ranks:
        return Run(
            uri,
            store,
            kind="trainguard",
            ranks=ranks or [0],
            info=info,
            source_factory=lambda r: RankSource(store, r),
        )
    top = store.list("", delimiter="/", limit=backends.PROBE_KEYS)
    for fmt in foreign.FORMATS:
        if fmt.detect(store, top):
            return fmt.open(uri, store)
    if wait:
        return Run(uri, store, kind="trainguard", ranks=[0], source_factory=lambda r: RankSource(store, r))
    *others, last = [OURS] + [fmt.expects for fmt in foreign.FORMATS]
    raise errors.NotFound(
        f"no run at {uri}: expected {', '.join(others)} or {last}; check the URI "
        "(`trainguard ls URI` lists the runs below a prefix)"
    )
