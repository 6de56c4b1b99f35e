"""The broker's security: TLS for listeners (tls.py), SASL (sasl.py), ACLs (authorizer.py)."""
