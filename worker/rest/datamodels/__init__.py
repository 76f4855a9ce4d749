"""The REST API's wire models: one pydantic model per Kafka Connect entity.

Modules mirror ``worker.rest.routes``; ``base`` holds what they share. Responses are named
``...Response`` and are built from the herder's objects (``worker.herder.models``) by
attribute: a route declares ``response_model=XResponse`` and returns the herder's object,
and FastAPI validates and serializes it in one pass. Request bodies are named ``...Body``.
"""
