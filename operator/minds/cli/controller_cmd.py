"""``minds controller run``: start the kopf controller after checking what it stands on."""

from __future__ import annotations

import logging
import os
import random
from datetime import UTC, datetime
from typing import Any

import typer

from minds.adapters.log_format import LOG_FORMAT_ENV, LogFormatError, parse_log_format
from minds.adapters.metrics.serve import BIND_ENV, BindAddressError, parse_bind_address

app = typer.Typer(help="Run the controller.", no_args_is_help=True)


@app.command()
def run(
    namespace: list[str] = typer.Option(
        [], "--namespace", "-n", help="Watch only these namespaces (default: all)."
    ),
    shard: str | None = typer.Option(
        None,
        help="Serve one shard: the namespaces its ClusterKopfPeering of this name declares, "
        "one replica acting at a time (docs/execution.md, Scaling out).",
    ),
    peering_lifetime: int = typer.Option(
        60,
        min=5,
        help="With --shard: seconds a replica that stopped without a word still counts as "
        "alive, the longest a standby waits before taking over.",
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v"),
    log_format: str = typer.Option(
        "text",
        "--log-format",
        envvar=LOG_FORMAT_ENV,
        help="text, or json: one JSON object per line (docs/observability.md, Logs).",
    ),
    liveness: str | None = typer.Option(
        None, help="Serve a liveness endpoint, e.g. http://0.0.0.0:8080/healthz."
    ),
    metrics_bind_address: str | None = typer.Option(
        None,
        "--metrics-bind-address",
        envvar=BIND_ENV,
        help="Serve Prometheus metrics on HOST:PORT (default 0.0.0.0:9090; empty: off).",
    ),
) -> None:
    """Run the controller in the foreground until interrupted."""
    try:
        chosen_format = parse_log_format(log_format)
    except LogFormatError as exc:
        typer.echo(f"error: --log-format ({LOG_FORMAT_ENV}): {exc}", err=True)
        raise typer.Exit(2) from exc
    if metrics_bind_address is not None:
        try:
            parse_bind_address(metrics_bind_address)
        except BindAddressError as exc:
            typer.echo(f"error: --metrics-bind-address: {exc}", err=True)
            raise typer.Exit(2) from exc
        # kopf runs the start-up that reads the configuration: the flag reaches it this way.
        os.environ[BIND_ENV] = metrics_bind_address
    if shard is not None and namespace:
        typer.echo(
            "error: --namespace and --shard: a shard serves the namespaces its "
            "ClusterKopfPeering declares (kubectl get clusterkopfpeerings)",
            err=True,
        )
        raise typer.Exit(2)
    # Imported here: loading the controller package registers kopf handlers, which only this
    # command wants.
    from minds.adapters.ledger import LedgerRoleError, SchemaError, check_app_role, check_schema
    from minds.adapters.log_format import configure_logging
    from minds.adapters.log_masking import install_log_masking
    from minds.controller.settings import ConfigError, ControllerConfig

    try:
        config = ControllerConfig.from_env()
        check_schema(config.database_url)
        check_app_role(config.database_url)
    except (ConfigError, SchemaError, LedgerRoleError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc

    peering: dict[str, Any] = {"standalone": True, "namespaces": namespace}
    if shard is not None:
        peering = _shard_peering(shard, config.kubeconfig, config.context, peering_lifetime)

    import kopf

    import minds.controller  # noqa: F401  (registers the handlers)

    configure_logging(chosen_format, verbose=verbose)
    set_log_levels(verbose=verbose)
    install_log_masking()
    kopf.run(clusterwide=not peering["namespaces"], liveness_endpoint=liveness, **peering)


#: Loggers that say little worth a line unless asked: the Kubernetes client's requests, and
#: kopf's per-object successes (a line for every watch event handled, thousands an hour, which
#: bury the warnings and errors that the same logger carries).
CHATTY: dict[str, tuple[int, int]] = {
    "kubernetes": (logging.WARNING, logging.WARNING),
    "kopf.objects": (logging.WARNING, logging.NOTSET),
}


def set_log_levels(*, verbose: bool) -> None:
    """Quiet the chatty loggers; ``--verbose`` lets kopf's per-object lines through."""
    for name, (quiet, loud) in CHATTY.items():
        logging.getLogger(name).setLevel(loud if verbose else quiet)


def _shard_peering(
    shard: str, kubeconfig: str | None, context: str | None, lifetime: int
) -> dict[str, Any]:
    """kopf.run's peering arguments for a replica of ``shard``, once the shard's declaration
    is proven sound; exits with the reason otherwise."""
    from minds.adapters.kube.client import api_client
    from minds.adapters.kube.peering import PeeringUnavailable, peering_objects
    from minds.controller.peering import peer_cluster_wide
    from minds.domain.sharding import ShardError, replica_priority, shard_to_serve

    try:
        served = shard_to_serve(shard, peering_objects(api_client(kubeconfig, context)))
    except (ShardError, PeeringUnavailable) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    peer_cluster_wide(lifetime)
    # Not a secret, only a tie-break between replicas started in the same millisecond.
    jitter = random.randrange(1000)  # noqa: S311
    return {
        "standalone": False,
        "peering_name": shard,
        "priority": replica_priority(datetime.now(UTC), jitter),
        "namespaces": sorted(served.namespaces),
    }
