"""Helpers shared by hooks, operators, sensors and triggers that import no hook at module
level: typed-answer checks, the connector-state rule, topic Assets, events, the status
link, offsets, status records, plugin manifests."""
