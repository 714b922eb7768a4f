from src.auth.callback import handle_callback


def test_login_from_checkout_returns_to_checkout() -> None:
    assert handle_callback({"return_to": "/checkout"}) == (302, "/checkout")
