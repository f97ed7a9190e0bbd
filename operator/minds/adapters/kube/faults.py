"""Injected API failures: proof that no failure of the API server leaves work waiting.

``MINDS_API_FAULTS`` lists faults, comma-separated, each ``METHOD PATH-PART STATUS COUNT``
(colons between): ``PUT:/plans/:500:2`` fails the next two PUTs whose path contains ``/plans/``
with a 500, before they reach the API server; ``PATCH:/deployments/:429:1`` one restart with
a 429. The controller's clients answer them as they would the API server's own, so the tests
see the work queue try again. Unset (the default), no client is wrapped. Never set it in
production: it exists for tests, like the failpoints of ``minds.engine.failpoints``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kubernetes import client
from kubernetes.client.exceptions import ApiException

log = logging.getLogger(__name__)

ENV = "MINDS_API_FAULTS"


@dataclass
class Fault:
    method: str
    path: str
    status: int
    left: int

    def matches(self, method: str, path: str) -> bool:
        return self.left > 0 and method.upper() == self.method and self.path in path


def parse(text: str) -> list[Fault]:
    """The faults ``text`` lists; a malformed entry is an error, never silently nothing."""
    faults = []
    for entry in filter(None, (part.strip() for part in text.split(","))):
        try:
            method, path, status, count = entry.split(":")
            faults.append(Fault(method.upper(), path, int(status), int(count)))
        except ValueError as exc:
            raise ValueError(f"{ENV}: {entry!r} is not METHOD:PATH-PART:STATUS:COUNT") from exc
    return faults


def inject(api: client.ApiClient, faults: list[Fault]) -> None:
    """Make ``api`` fail the requests ``faults`` name, each its count of times in all."""
    if not faults:
        return
    lock = threading.Lock()
    real: Callable[..., Any] = api.rest_client.request

    def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        path = urlsplit(url).path
        with lock:
            fault = next((f for f in faults if f.matches(method, path)), None)
            if fault is not None:
                fault.left -= 1
        if fault is None:
            return real(method, url, *args, **kwargs)
        log.warning("injected fault: %s %s answered %d (%s)", method, path, fault.status, ENV)
        raise ApiException(status=fault.status, reason="injected fault")

    api.rest_client.request = request  # type: ignore[method-assign]
