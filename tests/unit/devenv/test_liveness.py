"""The tests' liveness check is the chart's probe, not a stricter one of their own."""

from __future__ import annotations

import re

from minds.devenv.controller import LIVENESS_TIMEOUT_SECONDS
from minds.devenv.install import repo_root


def test_the_liveness_check_waits_as_long_as_the_charts_probe() -> None:
    template = (repo_root() / "charts/minds-operator/templates/deployment.yaml").read_text()
    probe = template[template.index("livenessProbe:") :]
    found = re.search(r"timeoutSeconds: (\d+)", probe)
    assert found is not None, "the chart's livenessProbe sets no timeoutSeconds"
    assert int(found.group(1)) == LIVENESS_TIMEOUT_SECONDS
