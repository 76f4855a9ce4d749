"""The version a plugin reports (Kafka's ``org.apache.kafka.connect.components.Versioned``).

Every plugin type's ``version()`` returns :data:`DEFAULT_VERSION` unless the plugin
overrides it; ``GET /connector-plugins`` lists it.
"""

from __future__ import annotations

DEFAULT_VERSION = "0.1.0"
