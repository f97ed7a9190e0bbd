"""What the controller exports to Prometheus: the catalogue and the pure state gauges."""
