from src.auth.callback import handle_callback


def test_login_with_return_to_goes_back() -> None:
    assert handle_callback({"return_to": "/checkout"}) == (302, "/checkout")


def test_login_from_checkout_returns_to_checkout() -> None:
    # The login link carries the page in the OAuth state parameter.
    assert handle_callback({"code": "abc", "state": "return_to=/checkout"}) == (302, "/checkout")


def test_login_without_a_page_lands_home() -> None:
    assert handle_callback({"code": "abc"}) == (302, "/")
