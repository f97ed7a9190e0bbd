"""In-memory fakes of the engine's ports, kept honest by ``tests/integration/test_port_contracts``:
the same contract suite runs against them and against the real adapters (a local
kube-apiserver, Postgres). Use them to drive the engine in milliseconds, never to prove
anything about the real adapters."""
