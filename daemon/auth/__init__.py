"""Who may talk to csd: CURVE keys, roles and secrets.

    zap.py           CURVE on csd's sockets, and the ZAP authenticator that admits registered keys only
    key_registry.py  the key registry and the server's keypair (`<state dir>/keys/`), and the roles
    join_tokens.py   a run's join token for its input workers: drawn here, only its digest kept

It imports the shared leaves (key files) and the model's token digest; nothing else of csd
(tests/test_layers.py).
"""
