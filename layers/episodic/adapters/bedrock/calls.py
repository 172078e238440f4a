"""One Bedrock call with the retries both Bedrock adapters need.

botocore's own retry modes absorb most throttling; what still reaches us --
``ThrottlingException``, ``ServiceUnavailableException``, ``ModelNotReadyException`` in
bursts, ``ModelTimeoutException`` when the model was too slow this once (botocore does not
retry it: it is a modelled error, not a transport timeout) -- is retried here with capped
exponential backoff, half fixed and half jitter so concurrent workers spread out. Each
adapter names its retryable codes in its :class:`RetryPolicy`; anything else fails at once.
Errors carry the AWS error code only: request bodies hold episode text, and messages reach
logs and HTTP responses.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from episodic.domain.errors import StorageError

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    retryable: frozenset[str]
    max_attempts: int
    base_delay: float
    max_delay: float

    def delay(self, attempt: int) -> float:
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return ceiling / 2 + random.uniform(0, ceiling / 2)


def call_bedrock(
    call: Callable[[], T],
    *,
    what: str,
    error: type[StorageError],
    policy: RetryPolicy,
    sleep: Callable[[float], None],
) -> T:
    attempt = 0
    while True:
        attempt += 1
        try:
            return call()
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "Unknown")
            if code not in policy.retryable:
                raise error(f"{what} failed ({code})") from exc
            if attempt == policy.max_attempts:
                raise error(f"{what} failed after {attempt} attempts ({code})") from exc
        except (BotoConnectionError, HTTPClientError) as exc:
            raise error(f"{what} failed (connection failed)") from exc
        sleep(policy.delay(attempt))
