"""REST security: extensions (``rest.extension.classes``), admin authorization
(``rest.admin.principals``) and the TLS client identity.

- ``extensions``: loading and registering REST extensions; what ``create_app`` installs;
- ``authorization``: ``/admin/*`` writes limited to admin principals;
- ``tls_scope``: the ASGI TLS extension (the client certificate's subject) for uvicorn.

The built-in basic-auth extension is a plugin like any other, built on ``worker.api``
alone: it lives with the other built-in plugins (``worker.builtin.rest_extensions.basic_auth``).
docs/security.md describes the behaviour and the trust model between workers.
"""
