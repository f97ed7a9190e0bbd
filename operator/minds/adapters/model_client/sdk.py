"""The `openai` SDK as the model client uses it, and all that knows the SDK's inner workings.

Imported when the first model client is built, not with the controller: the SDK costs about
24 MB of memory and 0.4 s at start, which a cluster that calls no model should not pay.

The SDK sends the request through the client's own httpx client (whose transport is the
address guard's) and retries it: timeouts, failed or dropped connections, 408, 409, 429 and
5xx, with exponential backoff, waiting out `Retry-After` exactly, and obeying a server's
`x-should-retry`. Two of its hooks are overridden: `_should_retry`, so that a `Retry-After`
longer than the client's cap ends the call instead of holding a worker, and
`_sleep_for_retry`, so that waits go through the client's `sleep` (tests count them instead of
waiting). Both are private to the SDK: the client's tests fail if a new version renames them,
and pyproject.toml holds the SDK to one major version.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, cast

import httpx
import openai

# The SDK refuses to start without a credential; the client's transport replaces (or drops)
# the header the SDK makes of it, so the SDK never holds the Mind's key.
PLACEHOLDER_KEY = "replaced-by-the-transport"


@dataclass(frozen=True)
class Failure:
    """Why the SDK returned no answer. `cause` is what the transport raised, when it did."""

    kind: Literal["status", "timeout", "connection", "request"]
    cause: BaseException | None
    response: httpx.Response | None = None
    body: object = None
    retryable: bool = False
    retry_after: float | None = None


class Sdk(openai.OpenAI):
    def __init__(
        self,
        *,
        max_retry_after: float,
        sleep: Callable[[float], None],
        base_url: str,
        http_client: httpx.Client,
        max_retries: int,
        timeout: float,
    ) -> None:
        self._max_retry_after = max_retry_after
        self._sleep = sleep
        super().__init__(
            api_key=PLACEHOLDER_KEY,
            base_url=base_url,
            # Annotated as httpx2's client only; the SDK takes an httpx one as well.
            http_client=cast(Any, http_client),
            max_retries=max_retries,
            timeout=timeout,
        )

    def complete(self, body: dict[str, Any]) -> bytes | Failure:
        """The raw body of a chat completion (the client judges it), or why there is none."""
        try:
            raw = self.chat.completions.with_raw_response.create(**body)
        except openai.APIStatusError as exc:
            response = cast(httpx.Response, exc.response)
            return Failure(
                "status",
                None,
                response,
                exc.body,
                retryable=self._retryable(response),
                retry_after=self.retry_after(response),
            )
        except openai.APITimeoutError as exc:
            return Failure("timeout", exc.__cause__, retryable=True)
        except openai.APIConnectionError as exc:
            return Failure("connection", exc.__cause__, retryable=True)
        except openai.OpenAIError as exc:
            return Failure("request", exc)
        return raw.http_response.content

    def retry_after(self, response: httpx.Response) -> float | None:
        """The server's wish in seconds (`Retry-After`, its `-ms` form or an HTTP date)."""
        after = self._parse_retry_after_header(cast(Any, response.headers))
        return max(0.0, after) if after is not None and math.isfinite(after) else None

    def _retryable(self, response: httpx.Response) -> bool:
        """Whether a later try may succeed: what the SDK retries, and a 429 however long the
        server asks to wait."""
        too_many = response.status_code == httpx.codes.TOO_MANY_REQUESTS
        return too_many or super()._should_retry(cast(Any, response))

    def _should_retry(self, response: Any) -> bool:
        after = self.retry_after(response)
        if after is not None and after > self._max_retry_after:
            return False
        return super()._should_retry(response)

    def _sleep_for_retry(
        self, *, retries_taken: int, max_retries: int, options: Any, response: Any
    ) -> None:
        headers = response.headers if response is not None else None
        self._sleep(self._calculate_retry_timeout(max_retries - retries_taken, options, headers))
