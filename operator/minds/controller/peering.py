"""kopf peering for a controller shard: its replicas meet in one ClusterKopfPeering."""

from __future__ import annotations

from typing import Any

import kopf


def peer_cluster_wide(lifetime: int) -> None:
    """Make the replicas of a shard meet in the shard's one cluster-scoped peering object.

    kopf peers a namespace-restricted controller through a KopfPeering in every namespace it
    serves; a shard's declaration and its liveness records live in one cluster-scoped object
    instead, which only a cluster admin can create or annotate. kopf takes the peering mode
    from ``kopf.run``'s own arguments, so it is set here, before the first watch starts.
    ``lifetime`` is how long a replica that stopped without a word (killed, its node gone)
    still counts as alive: the longest a standby waits before taking over.
    """

    @kopf.on.startup()
    def shard_peering(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.peering.clusterwide = True
        settings.peering.lifetime = lifetime
        # Keep-alives every few seconds would bury the controller's own log.
        settings.peering.stealth = True
        # A shard's namespaces are exact names, fixed at start: nothing to discover, so the
        # controller needs no right to list Namespaces (kopf would retry that for a minute).
        settings.scanning.disabled = True
