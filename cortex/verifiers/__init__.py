"""Verifiers: the protocol and the built-ins (command, pytest, scope).

Not built yet: verification arrives with the verification issue. Third-party verifiers will
register through the `cortex.verifiers` entry-point group.
"""
