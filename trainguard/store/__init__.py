"""The store: the run format and the code that moves it.

Owns the format contract (`format`), the storage protocol and its backends (`backend`,
`local` for file://, `s3` for s3://), the buffered background writer (`writer`), and the
readers (`source`, `reader`, `follow`, plus `smdebug` and `tensorboard` for foreign runs).
May import only `trainguard.errors` and `trainguard.api`; never imports capture, rules,
the evaluator or the operator. Never unpickles anything it reads.
"""

from trainguard.store.backend import Store, open_store
from trainguard.store.reader import Run, Series, open_run

__all__ = ["Run", "Series", "Store", "open_run", "open_store"]
