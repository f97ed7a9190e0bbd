pytest_plugins = ["tests.fixtures.postgres", "tests.fixtures.cluster"]
