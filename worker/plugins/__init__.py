"""Plugins: discovery from ``plugin.path`` and manifests (KIP-898), and the registry that
resolves class names and aliases (docs/plugins.md)."""
