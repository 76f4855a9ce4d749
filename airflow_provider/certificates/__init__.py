"""Certificate rotation of the workers' REST listeners, without an Airflow context: the
steps of a rotation (rotation) and the PKCS12 keystores it installs (keystores). The
handshakes that verify it are hooks (hooks/tls.py); operators/certificates.py and
triggers/certificates.py are the thin Airflow-facing classes."""
