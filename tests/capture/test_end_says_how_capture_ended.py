"""END.json says how the capture ended: an exception that leaves the `with` block, or reaches the excepthook."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import trainguard
from trainguard.store import run_format
from trainguard.store.backends import open_store


def end_of(uri: str) -> run_format.EndInfo:
    return run_format.EndInfo.model_validate_json(open_store(uri).get(run_format.end_key(0)))


def test_an_exception_leaving_the_with_block_is_in_end_json(file_uri: str) -> None:
    with pytest.raises(ZeroDivisionError), trainguard.Recorder(file_uri, save_interval=1) as rec:
        rec.record_tensor("w", np.ones(3), collection="weights")
        rec.step()
        raise ZeroDivisionError("the batch was empty")
    end = end_of(file_uri)
    assert (end.status, end.exception) == ("error", "ZeroDivisionError: the batch was empty")


def test_a_script_ending_by_an_uncaught_exception_has_it_in_end_json(file_uri: str) -> None:
    script = textwrap.dedent(
        f"""
        import numpy as np, trainguard
        rec = trainguard.Recorder({file_uri!r}, save_interval=1)
        rec.record_tensor("w", np.ones(3), collection="weights")
        rec.step()
        raise KeyError("labels")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 1 and "KeyError: 'labels'" in done.stderr  # the traceback is still printed
    end = end_of(file_uri)
    assert (end.status, end.exception) == ("error", "KeyError: 'labels'")


def test_a_clean_exit_is_ok(file_uri: str) -> None:
    with trainguard.Recorder(file_uri, save_interval=1) as rec:
        rec.record_tensor("w", np.ones(3), collection="weights")
        rec.step()
    assert (end_of(file_uri).status, end_of(file_uri).exception) == ("ok", None)
