"""``minds controller run``: start the kopf controller after checking what it stands on."""

from __future__ import annotations

import logging
import os

import typer

from minds.adapters.metrics.serve import BIND_ENV, BindAddressError, parse_bind_address

app = typer.Typer(help="Run the controller.", no_args_is_help=True)


@app.command()
def run(
    namespace: list[str] = typer.Option(
        [], "--namespace", "-n", help="Watch only these namespaces (default: all)."
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v"),
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
    if metrics_bind_address is not None:
        try:
            parse_bind_address(metrics_bind_address)
        except BindAddressError as exc:
            typer.echo(f"error: --metrics-bind-address: {exc}", err=True)
            raise typer.Exit(2) from exc
        # kopf runs the start-up that reads the configuration: the flag reaches it this way.
        os.environ[BIND_ENV] = metrics_bind_address
    # Imported here: loading the controller package registers kopf handlers, which only this
    # command wants.
    from minds.adapters.ledger import LedgerRoleError, SchemaError, check_app_role, check_schema
    from minds.adapters.log_masking import install_log_masking
    from minds.controller.settings import ConfigError, ControllerConfig

    try:
        config = ControllerConfig.from_env()
        check_schema(config.database_url)
        check_app_role(config.database_url)
    except (ConfigError, SchemaError, LedgerRoleError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc

    import kopf

    import minds.controller  # noqa: F401  (registers the handlers)

    kopf.configure(verbose=verbose, log_format=kopf.LogFormat.PLAIN)
    logging.getLogger("kubernetes").setLevel(logging.WARNING)
    install_log_masking()
    kopf.run(
        standalone=True,
        clusterwide=not namespace,
        namespaces=namespace,
        liveness_endpoint=liveness,
    )
