"""How many threads the vectors' arithmetic may use: one.

Recall's vector search multiplies one query by a tenant's vectors: a matrix-vector product one core
does in well under a millisecond at tens of thousands of rows. OpenBLAS spreads it over every core
and then keeps its helper threads spinning, waiting for the next product: on two cores that
spinning cost 12 ms of CPU a recall in one process, more than the recall's own work, taken from the
requests running beside it (``benchmarks/mixed_load.py --workers 1`` reads the server's CPU a
request).
"""

from __future__ import annotations

from threadpoolctl import threadpool_limits


def blas_on_one_thread() -> None:
    """BLAS on one thread, process-wide, from now on."""
    threadpool_limits(limits=1, user_api="blas")
