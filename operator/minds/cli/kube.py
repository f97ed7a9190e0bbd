"""How a command reaches the API server, and what it says when nothing tells it where that is.

``api_client`` falls back to the Pod's ServiceAccount whenever the kubeconfig cannot be
loaded, so every kubeconfig problem used to surface as the in-cluster loader's "Service
host/port is not set". A person needs to hear what to fix instead: the file that is missing
and the flag or variable that named it, or that nothing named one at all.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml
from kubernetes import client, config
from kubernetes.config import ConfigException

from minds.adapters.kube.client import api_client

#: Where the kubernetes client (and kubectl) looks when nothing names a kubeconfig.
DEFAULT_KUBECONFIG = "~/.kube/config"
#: Set in every Pod: without them there is no ServiceAccount to fall back to.
IN_CLUSTER_ENV = ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")


class NoKubeconfig(ConfigException):
    """No usable kubeconfig, and no Pod's ServiceAccount to use instead."""


@dataclass(frozen=True)
class Kubeconfig:
    """The kubeconfig files a command would read, as the kubernetes client finds them."""

    #: What named them: "--kubeconfig", "KUBECONFIG", or None for the default place.
    named_by: str | None
    paths: tuple[str, ...]

    @classmethod
    def of(cls, kubeconfig: str | None) -> Kubeconfig:
        # A --kubeconfig option that reads KUBECONFIG cannot tell which set it: the value can.
        env = os.environ.get("KUBECONFIG")
        named = kubeconfig or env
        by = None if not named else ("KUBECONFIG" if named == env else "--kubeconfig")
        return cls(by, tuple(p for p in (named or DEFAULT_KUBECONFIG).split(os.pathsep) if p))

    @property
    def present(self) -> tuple[str, ...]:
        return tuple(p for p in self.paths if Path(p).expanduser().is_file())

    def describe(self) -> str:
        return ", ".join(self.present or self.paths)


def connect(kubeconfig: str | None, context: str | None) -> client.ApiClient:
    """``api_client``, whose failure to find a cluster names the kubeconfig that is missing or
    broken (or says that none was named and this is no Pod)."""
    try:
        return api_client(kubeconfig, context)
    except ConfigException as exc:
        raise _why_no_cluster(Kubeconfig.of(kubeconfig), context, exc) from exc
    except yaml.YAMLError as exc:
        files = Kubeconfig.of(kubeconfig).describe()
        raise NoKubeconfig(f"the kubeconfig {files} is not YAML: {_yaml_problem(exc)}") from exc
    except OSError as exc:  # there, but a directory, or not readable by this user
        files = Kubeconfig.of(kubeconfig).describe()
        raise NoKubeconfig(f"the kubeconfig {files} cannot be read: {exc.strerror}") from exc


def _yaml_problem(exc: yaml.YAMLError) -> str:
    # PyYAML's message spans lines (context, problem, where); one line says what and where.
    problem = getattr(exc, "problem", None) or type(exc).__name__
    mark = getattr(exc, "problem_mark", None)
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark else problem


def _why_no_cluster(
    files: Kubeconfig, context: str | None, failed: ConfigException
) -> ConfigException:
    if not files.present:
        if len(files.paths) > 1:
            return NoKubeconfig(
                f"none of the kubeconfigs {files.describe()} (named by {files.named_by}) exists"
            )
        if files.named_by:
            return NoKubeconfig(
                f"the kubeconfig {files.describe()} (named by {files.named_by}) does not exist"
            )
        if not all(os.environ.get(v) for v in IN_CLUSTER_ENV):
            return NoKubeconfig(
                f"no kubeconfig: KUBECONFIG is not set, {DEFAULT_KUBECONFIG} does not exist, "
                "and this is not a Pod in a cluster"
            )
        return failed  # a Pod: the in-cluster loader's own reason is the one
    # The file is there but does not load: load it again, without the fallback, for its own
    # reason (a context it lacks, a key missing). Only on this path, which ends the command.
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=os.pathsep.join(files.paths),
            context=context,
            client_configuration=client.Configuration(),
        )
    except ConfigException as exc:
        return NoKubeconfig(f"the kubeconfig {files.describe()}: {exc}")
    return failed
