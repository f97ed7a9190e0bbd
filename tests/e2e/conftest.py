from collections.abc import Iterator

import pytest

from minds.adapters.ledger import Ledger
from minds.adapters.ledger.keys import load_keys
from minds.devenv.controller import LEDGER_KEY_ID, ControllerHandle
from tests.e2e.executor_support import assert_no_tracebacks
from tests.fixtures.cluster import Cluster, paused


@pytest.fixture
def controller_without_errors(session_controller: ControllerHandle) -> Iterator[None]:
    """Whatever a test asserts, the session controller must not have failed on the way (a
    module opts in with ``pytest.mark.usefixtures``)."""
    before = len(session_controller.log())
    yield
    assert_no_tracebacks(session_controller.log()[before:])


@pytest.fixture
def e2e_ledger(e2e_database_url: str, cluster: Cluster):
    """The session's ledger as a controller of the session writes it: sealed with the
    session's key, so that what a test appends in-process keeps every chain verifiable."""
    key = load_keys(cluster.ledger_keys, LEDGER_KEY_ID).active
    with Ledger.from_url(e2e_database_url, key) as ledger:
        yield ledger


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture
def capability_service(cluster, e2e_ledger):  # type: ignore[no-untyped-def]
    """The capability service in-process, with the controller's own credentials: the tests
    play "a plan step invoking a capability" while the controller process handles the rest."""
    from datetime import UTC, datetime

    from minds.adapters.drivers import default_drivers
    from minds.adapters.kube.client import KubeEvents, KubeResources, api_client
    from minds.domain.capabilities.registry import REGISTRY
    from minds.engine.assembly import EnginePorts, assemble

    api = api_client(str(cluster.controller_kubeconfig))
    return assemble(
        EnginePorts(
            resources=KubeResources(api),
            ledger=e2e_ledger,
            events=KubeEvents(api),
            drivers=default_drivers(api),
            clock=lambda: datetime.now(UTC),
            registry=REGISTRY,
        )
    ).capabilities


@pytest.fixture
def alone(
    session_controller: ControllerHandle, cluster: Cluster, e2e_database_url: str
) -> Iterator[None]:
    """Pause the session controller (it would race the controllers a test starts) and start
    it again afterwards with the same pid file, log and liveness endpoint."""
    with paused(session_controller, cluster, e2e_database_url):
        yield


@pytest.fixture
def alone_in_world(
    world_controller: ControllerHandle, world: Cluster, e2e_database_url: str
) -> Iterator[None]:
    """The same for the world's controller."""
    with paused(world_controller, world, e2e_database_url):
        yield
