import pytest

from minds.adapters.ledger import Ledger


@pytest.fixture
def e2e_ledger(e2e_database_url: str):
    with Ledger.from_url(e2e_database_url) as ledger:
        yield ledger


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)
