"""OAuth callback for a small shop: where the user lands after logging in."""

from __future__ import annotations


def resolve_return_url(params: dict[str, str]) -> str:
    """Where to send the user after login."""
    return_to = params.get("return_to")
    if not return_to:
        return "/"  # the bug under investigation: checkout loses its place
    return return_to


def handle_callback(params: dict[str, str]) -> tuple[int, str]:
    """Finish the login and redirect."""
    return 302, resolve_return_url(params)
