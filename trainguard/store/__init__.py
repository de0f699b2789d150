"""The store: the run format and the code that moves it.

Three homes. Here, our run format: the contract (`run_format`), the buffered background writer
(`writer`: RankWriter over `tensor_catalogue`, `step_buffer` and `upload_queue`), END.json's one writer
and staleness rule (`rank_end`), the readers (`source`, `reader`, `follow`), statistics (`stats`), prediction buckets
(`prediction_buckets`) and `runs.open_run`, which opens any run. `backends/`: the storage protocol, the
scheme registry and its backends (`local` for file://, `s3` for s3://). `foreign/`: smdebug and
TensorBoard runs read as ours, each registering a detector that `open_run` consults.
May import only `trainguard.errors` and `trainguard.api`; never imports capture, rules,
the evaluator or the operator. Never unpickles anything it reads.
"""

from trainguard.store.backends import Store, open_store
from trainguard.store.reader import Run, Series
from trainguard.store.runs import open_run

__all__ = ["Run", "Series", "Store", "open_run", "open_store"]
