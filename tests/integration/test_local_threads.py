"""The local service keeps BLAS on one thread: OpenBLAS's helper threads spin between the
matrix-vector products of vector search, burning a core the requests beside it need."""

import numpy as np
from threadpoolctl import threadpool_info

from episodic.application.settings import Settings
from episodic.bootstrap.local import build_local_service
from tests.support.doubles import HashingTestEmbedder


def test_given_the_local_service_when_built_then_blas_runs_on_one_thread(tmp_path):
    np.ones((64, 64)) @ np.ones(64)  # BLAS loaded, with however many threads it chose
    with build_local_service(Settings(data_dir=tmp_path), embedder=HashingTestEmbedder()):
        blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
        assert blas and all(pool["num_threads"] == 1 for pool in blas)
