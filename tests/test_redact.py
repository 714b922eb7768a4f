"""Unit tests of the redaction pipeline (cortex/cases/redact.py, docs/design/redaction.md).

Every made-up secret here is built from an obvious filler ("FAKE", "fake", "0") in the real
shape of the credential, by concatenation, so no file holds anything that is or looks like a
real key to a scanner. Tables name each case; properties run with a fixed seed.
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cortex.cases import redact
from cortex.cases.redact import (
    PRIVATE,
    REDACTED,
    Redactor,
    literal_rule,
    redact_assignments,
    redact_credentials,
    redact_token_shapes,
    strip_private,
)

DETERMINISTIC = settings(
    derandomize=True,
    database=None,
    deadline=None,
    # A mutation run (docs/testing.md) runs these once per mutant: fewer examples keep it to
    # minutes; the fast default run still tries 300.
    max_examples=30 if os.environ.get("MUTANT_UNDER_TEST") else 300,
    # A mutation run (docs/testing.md) calls each test from several instances of its class in
    # one process; the tests keep no state on `self`.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors],
)

REDACTOR = Redactor()


def fill(length: int, unit: str = "FAKE") -> str:
    """`unit` repeated and cut to exactly `length` characters."""
    return (unit * (length // len(unit) + 1))[:length]


# Made-up values in real shapes ---------------------------------------------------------------

AWS_KEY_ID = "AKIA" + fill(16)
GITHUB_CLASSIC = "ghp_" + fill(36)
GITHUB_FINE_GRAINED = "github_pat_" + fill(22) + "_" + fill(59, "fake")
GITLAB = "glpat-" + fill(20)
SLACK_BOT = "xoxb-" + fill(11, "0") + "-" + fill(13, "0") + "-" + fill(24)
SLACK_WEBHOOK = "https://hooks.slack.com/services/T" + fill(8) + "/B" + fill(8) + "/" + fill(24)
STRIPE_SECRET = "sk_live_" + fill(24)
OPENAI_KEY = "sk-" + fill(48)
JWT = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiJGQUtFIn0." + fill(43, "fAkE")
PEM_BODY = "\n".join(fill(64, "FAKEfake0123") for _ in range(3))


def pem(kind: str, body: str = PEM_BODY, *, end: bool = True) -> str:
    """A PEM private-key block of `kind` (e.g. "RSA "), with or without its END line."""
    block = f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n"
    return block + f"-----END {kind}PRIVATE KEY-----" if end else block


TOKEN_SHAPES = {
    "aws_akia": AWS_KEY_ID,
    "aws_asia": "ASIA" + fill(16),
    "github_ghp": GITHUB_CLASSIC,
    "github_gho": "gho_" + fill(36),
    "github_ghs": "ghs_" + fill(36),
    "github_fine_grained": GITHUB_FINE_GRAINED,
    "gitlab_glpat": GITLAB,
    "gitlab_ci_job": "glcbt-64_" + fill(24),
    "gitlab_oauth_secret": "gloas-" + fill(64, "fa4e"),
    "gitlab_runner_registration": "GR1348941" + fill(20),
    "slack_xoxb": SLACK_BOT,
    "slack_xoxp": "xoxp-" + fill(12, "0") + "-" + fill(32),
    "slack_xapp": "xapp-1-A" + fill(10) + "-" + fill(13, "0") + "-" + fill(64, "fa4e"),
    "slack_webhook": SLACK_WEBHOOK,
    "stripe_sk_live": STRIPE_SECRET,
    "stripe_sk_test": "sk_test_" + fill(24),
    "stripe_rk_live": "rk_live_" + fill(24),
    "stripe_rk_test": "rk_test_" + fill(24),
    "stripe_pk_live": "pk_live_" + fill(24),
    "stripe_pk_test": "pk_test_" + fill(24),
    "stripe_whsec": "whsec_" + fill(32),
    "openai_sk": OPENAI_KEY,
    "openai_sk_proj": "sk-proj-" + fill(64, "FAKE_fake-"),
    "anthropic_sk_ant": "sk-ant-api03-" + fill(93, "FAKE-fake_") + "AA",
    "google_aiza": "AIza" + fill(35, "FAKE_fake-"),
    "npm": "npm_" + fill(36),
    "sendgrid": "SG." + fill(22) + "." + fill(43, "fake"),
    "huggingface": "hf_" + fill(34),
    "twilio_api_key": "SK" + fill(32, "fa4e"),
    "jwt": JWT,
    "jwt_alg_none": "eyJhbGciOiJub25lIn0." + "eyJzdWIiOiJGQUtFIn0.",
    # Issue 18, item 6.
    "shopify_shpat": "shpat_" + fill(32, "fa4e"),
    "shopify_shpss": "shpss_" + fill(32, "fa4e"),
    "pypi": "pypi-AgEIcHlwaS5vcmc" + fill(64, "FAKE_fake-"),
    "digitalocean_dop": "dop_v1_" + fill(64, "fa4e"),
    "digitalocean_doo": "doo_v1_" + fill(64, "fa4e"),
    "google_oauth_client_secret": "GOCSPX-" + fill(28, "FAKE_fake-"),
    "age_secret_key": "AGE-SECRET-KEY-1" + fill(58, "FAKE"),
}


class TestTokenShapes:
    """Each known credential shape becomes the marker, wherever it sits in a line."""

    @pytest.mark.parametrize(("shape", "secret"), TOKEN_SHAPES.items(), ids=TOKEN_SHAPES.keys())
    def test_shape_is_replaced_in_prose(self, shape: str, secret: str) -> None:
        """The token alone is replaced; the prose around it is kept exactly."""
        text = f"the {shape} value {secret} was in the log."
        assert REDACTOR(text) == f"the {shape} value {REDACTED} was in the log."

    @pytest.mark.parametrize(("shape", "secret"), TOKEN_SHAPES.items(), ids=TOKEN_SHAPES.keys())
    def test_shape_is_replaced_inside_json(self, shape: str, secret: str) -> None:
        """Inside a JSON string the token goes and the document stays valid JSON."""
        document = json.dumps({"note": f"{shape}: see {secret}", "n": 1})
        out = REDACTOR(document)
        assert secret not in out
        assert json.loads(out)["n"] == 1

    @pytest.mark.parametrize(("shape", "secret"), TOKEN_SHAPES.items(), ids=TOKEN_SHAPES.keys())
    def test_rule_alone_catches_the_shape(self, shape: str, secret: str) -> None:
        """The token-shape rule itself (not a later rule by accident) removes the shape."""
        if shape.startswith("slack_webhook"):
            assert redact_token_shapes(secret) == REDACTED
        else:
            assert redact_token_shapes(f"({secret})") == f"({REDACTED})"

    @pytest.mark.parametrize(
        "text",
        [
            "AKIA" + fill(15),  # one character short
            "7AKIA" + fill(16),  # part of a longer upper-case word
            "AKIA" + fill(17),  # one character long
            "ghp_" + fill(10),  # too short
            "glpat-" + fill(10),
            "sk-" + fill(10),
            "task-" + fill(30),  # "sk-" inside a word
            "npm_" + fill(20),
            "hf_" + fill(10),
            "SK" + fill(31, "fa4e"),  # Twilio: 31 hex digits
            "sk" + fill(32, "fa4e"),  # Twilio SIDs are upper-case SK
            "eyJhbGciOiJIUzI1NiJ9",  # a JWT header alone
            "shpat_" + fill(31, "fa4e"),  # Shopify: 31 hex digits
            "pypi-simple-index",  # a package name, not a macaroon
            "pypi-AgE" + fill(20),  # too short for a token
            "dop_v1_" + fill(63, "fa4e"),
            "GOCSPX-" + fill(27, "FAKE"),
            "AGE-SECRET-KEY-1" + fill(57, "FAKE"),
            "AGE-SECRET-KEY-1" + fill(58, "fake"),  # Bech32 here is upper-case
        ],
    )
    def test_near_misses_are_left_alone(self, text: str) -> None:
        """Strings that only resemble a shape are not touched."""
        assert REDACTOR(f"see {text} here") == f"see {text} here"

    def test_many_tokens_in_one_line_are_all_removed(self) -> None:
        """Several shapes in one line are all replaced, nothing else changes."""
        secrets = list(TOKEN_SHAPES.values())
        out = REDACTOR(" | ".join(secrets))
        assert out == " | ".join([REDACTED] * len(secrets))


AZURE_ACCOUNT_KEY = fill(86, "FAKEfake0123+/") + "=="
AZURE_SAS_SIGNATURE = fill(40, "FAKEfake0123") + "%2B" + fill(3) + "%3D"


class TestAzure:
    """Azure storage account keys and shared access signatures (issue 18, item 6)."""

    def test_account_key_in_a_connection_string(self) -> None:
        """Only the key goes: the rest of the connection string still says where it points."""
        text = (
            "DefaultEndpointsProtocol=https;AccountName=fakeaccount;"
            f"AccountKey={AZURE_ACCOUNT_KEY};EndpointSuffix=core.windows.net"
        )
        assert REDACTOR(text) == (
            "DefaultEndpointsProtocol=https;AccountName=fakeaccount;"
            f"AccountKey={REDACTED};EndpointSuffix=core.windows.net"
        )

    def test_shared_access_key_in_a_service_bus_connection_string(self) -> None:
        """Service Bus and Event Hubs spell it SharedAccessKey."""
        key = fill(43, "FAKEfake0123") + "="
        text = (
            "Endpoint=sb://fake.servicebus.windows.net/;SharedAccessKeyName=Root;"
            f"SharedAccessKey={key}"
        )
        out = REDACTOR(text)
        assert key not in out
        # `SharedAccessKeyName` names an access key too: its value is masked with the rest.
        assert out.startswith("Endpoint=sb://fake.servicebus.windows.net/;SharedAccessKeyName=")
        assert redact_token_shapes(text).endswith(f"SharedAccessKey={REDACTED}")

    def test_sas_signature_in_a_url(self) -> None:
        """The `sig` parameter of a SAS URL goes; the other parameters stay readable."""
        url = (
            "https://fakeaccount.blob.core.windows.net/c/b.txt?sv=2022-11-02&ss=b&srt=o"
            f"&sp=r&se=2030-01-01T00:00:00Z&sig={AZURE_SAS_SIGNATURE}&spr=https"
        )
        out = REDACTOR(f"GET {url} 200")
        assert AZURE_SAS_SIGNATURE not in out
        assert f"&sig={REDACTED}&spr=https 200" in out

    def test_sas_token_alone(self) -> None:
        """A SAS token without its URL (`?sv=...&sig=...`) loses its signature too."""
        out = REDACTOR(f"token ?sv=2022-11-02&sp=rl&sig={AZURE_SAS_SIGNATURE}")
        assert out == f"token ?sv=2022-11-02&sp=rl&sig={REDACTED}"

    @pytest.mark.parametrize(
        "text",
        [
            "AccountKey=short",
            "the sig= parameter signs the URL",
            "config.sig=abc",
            "AccountName=fakeaccount;EndpointSuffix=core.windows.net",
        ],
    )
    def test_near_misses_are_left_alone(self, text: str) -> None:
        """Short values and prose about the parameters are not secrets."""
        assert REDACTOR(text) == text


class TestPemBlocks:
    """Private-key blocks go from BEGIN to END, or to the end when END is missing."""

    @pytest.mark.parametrize(
        "kind", ["RSA ", "EC ", "OPENSSH ", "DSA ", "ENCRYPTED ", ""], ids=repr
    )
    def test_block_with_end_line(self, kind: str) -> None:
        """The whole block, header to footer, becomes one marker; the text around stays."""
        text = f"key:\n{pem(kind)}\ntrailing text"
        assert REDACTOR(text) == f"key:\n{REDACTED}\ntrailing text"

    def test_pgp_private_key_block(self) -> None:
        """A PGP `PRIVATE KEY BLOCK` armor is removed with its checksum line."""
        block = (
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
            f"{PEM_BODY}\n=FaKe\n"
            "-----END PGP PRIVATE KEY BLOCK-----"
        )
        assert REDACTOR(f"a {block} b") == f"a {REDACTED} b"

    def test_block_missing_end_line_redacts_to_the_end(self) -> None:
        """Without its END line a block runs to the end of the text (fail closed)."""
        text = "before\n" + pem("RSA ", end=False) + "more lines\nof the key\n"
        assert REDACTOR(text) == "before\n" + REDACTED

    def test_block_missing_end_inside_json_stops_at_the_string(self) -> None:
        """A truncated key inside a JSON string is removed to that string's end, not beyond."""
        document = json.dumps({"key": pem("RSA ", end=False) + "tail", "n": 1})
        out = REDACTOR(document)
        assert json.loads(out) == {"key": REDACTED, "n": 1}

    def test_two_blocks_are_removed_separately(self) -> None:
        """Text between two blocks survives: each block ends at its own END line."""
        text = f"{pem('RSA ')}\nbetween\n{pem('EC ')}"
        assert REDACTOR(text) == f"{REDACTED}\nbetween\n{REDACTED}"

    def test_a_tail_cut_inside_a_block_keeps_no_key_line(self) -> None:
        """Kept output that starts inside a key: its body lines go with the END line.

        Issue 18, item 2: the verifier runner keeps the tail of long output; a tail starting
        inside a private key held body lines and the END line but no BEGIN, and kept them.
        """
        lines = [fill(64, "FAKEfake0123") for _ in range(3)]
        text = (
            "[... 9000 bytes omitted ...]\n"
            + "\n".join(lines)[20:]
            + "\n-----END RSA PRIVATE KEY-----\ntests: 3 passed\n"
        )
        out = REDACTOR(text)
        assert out == f"[... 9000 bytes omitted ...]\n{REDACTED}\ntests: 3 passed\n"

    @pytest.mark.parametrize(
        "before",
        ["log line\n", "", "Proc-Type: 4,ENCRYPTED\n", "armor\n\n", "x-----\r\n", "done.\n"],
        ids=["prose", "start", "pem_header", "blank_line", "crlf", "last_char_not_base64"],
    )
    def test_an_end_line_without_begin_takes_the_body_lines_before_it(self, before: str) -> None:
        """Every base64 line right before an orphan END line is masked; the line above stays."""
        body = "\r\n".join([fill(64, "FAKE+/09"), fill(40, "fake") + "=="])
        text = f"{before}{body}\r\n-----END OPENSSH PRIVATE KEY-----\r\nafter"
        assert REDACTOR(text) == f"{before}{REDACTED}\r\nafter"

    def test_an_end_line_glued_to_the_last_body_line(self) -> None:
        """`...QUFB-----END ...` (no line break before END) still takes the body above it.

        Kills `body.fullmatch(text, line, start)` -> `fullmatch(text, start)` and ->
        `fullmatch(text, line)` in `redact_pem_remnants` (only the END line was masked). The
        `done.` case above kills `fullmatch(text, above, start - 1)` -> `start - 2`.
        """
        text = f"{fill(64, 'FAKE+/09')}\n{fill(20, 'fake')}==-----END RSA PRIVATE KEY-----\nok"
        assert REDACTOR(text) == f"{REDACTED}\nok"

    def test_an_orphan_pgp_footer_takes_its_checksum_and_body(self) -> None:
        """A PGP armor cut after its blank line loses its body and checksum line."""
        text = f"{PEM_BODY}\n=FaKe\n-----END PGP PRIVATE KEY BLOCK-----\n"
        assert REDACTOR(text) == f"{REDACTED}\n"

    def test_public_key_and_certificate_are_not_private(self) -> None:
        """Public material is not a private key and is left alone."""
        text = f"-----BEGIN PUBLIC KEY-----\n{PEM_BODY}\n-----END PUBLIC KEY-----"
        assert REDACTOR(text) == text


class TestCredentials:
    """Authorization headers, bearer tokens and passwords in URLs."""

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("Authorization: Bearer abc.def", f"Authorization: Bearer {REDACTED}"),
            ("Authorization: Basic dXNlcjpwYXNz", f"Authorization: Basic {REDACTED}"),
            ("authorization: token fake1234", f"authorization: token {REDACTED}"),
            ("AUTHORIZATION=fakeFAKE", f"AUTHORIZATION={REDACTED}"),
            ("Proxy-Authorization: Digest x", f"Proxy-Authorization: Digest {REDACTED}"),
            (
                "curl -H 'Authorization: Bearer fake' https://x.invalid",
                f"curl -H 'Authorization: Bearer {REDACTED}' https://x.invalid",
            ),
            ('{"Authorization": "Basic ZmFrZQ=="}', f'{{"Authorization": "Basic {REDACTED}"}}'),
            ("{'Authorization': 'Bearer fake'}", f"{{'Authorization': 'Bearer {REDACTED}'}}"),
            ('Authorization: "Bearer fake"', f'Authorization: "Bearer {REDACTED}"'),
        ],
    )
    def test_authorization_headers(self, text: str, expected: str) -> None:
        """The scheme is kept and the credential after it is masked, in every header form."""
        assert redact_credentials(text) == expected
        assert REDACTOR(text) == expected

    @pytest.mark.parametrize(
        "text", ['{"Authorization": null}', '{"Authorization": 12}', '{"Authorization: ": 1}']
    )
    def test_authorization_never_breaks_json(self, text: str) -> None:
        """A bare JSON value after an Authorization key is not a header and is left alone."""
        assert REDACTOR(text) == text

    def test_escaped_quote_after_authorization_stays_escaped(self) -> None:
        """The credential stops before a backslash, so `\\"` inside a JSON string survives."""
        document = json.dumps({"h": 'authorization: fake"quoted'})
        out = REDACTOR(document)
        assert json.loads(out) == {"h": f'authorization: {REDACTED}"quoted'}

    def test_bearer_token_in_prose(self) -> None:
        """A long bearer credential with a digit is masked even without a header name."""
        text = "sent bearer " + fill(30, "FaKe7") + " to the API"
        assert REDACTOR(text) == f"sent bearer {REDACTED} to the API"

    @pytest.mark.parametrize(
        ("url", "expected"),
        [
            (
                "postgres://app:FakePass123@db.invalid:5432/app",
                f"postgres://app:{REDACTED}@db.invalid:5432/app",
            ),
            ("https://u:p4ss@example.invalid/x", f"https://u:{REDACTED}@example.invalid/x"),
            (
                "redis://:FakeRedisPass@cache.invalid:6379",
                f"redis://:{REDACTED}@cache.invalid:6379",
            ),
            ("amqp://u:fa@ke@mq.invalid/vhost", f"amqp://u:{REDACTED}@mq.invalid/vhost"),
            (
                "postgres://admin:Fa/9+keQ@db.invalid:5432/app",
                f"postgres://admin:{REDACTED}@db.invalid:5432/app",
            ),
            (
                "https://u:fake@host.invalid/x?email=a@b.invalid",
                f"https://u:{REDACTED}@host.invalid/x?email=a@b.invalid",
            ),
        ],
    )
    def test_password_in_url(self, url: str, expected: str) -> None:
        """The password part of a URL's userinfo is masked; user, host and path are kept."""
        assert REDACTOR(f"connect to {url} now") == f"connect to {expected} now"

    @pytest.mark.parametrize(
        "text",
        [
            "https://example.invalid:8443/path",
            "see https://example.invalid/a@b",
            "mail fake@example.invalid",
            "ssh git@github.com:org/repo.git",
            "http://localhost:4873/@babel/core",
            "https://example.invalid:443/users/@me",
        ],
    )
    def test_urls_without_password_are_kept(self, text: str) -> None:
        """Ports, `@` in paths and scp-style addresses are not passwords."""
        assert REDACTOR(text) == text


class TestAssignments:
    """Values assigned to secret-named keys: the key and separator stay, the value goes."""

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("DB_PASSWORD=FakePass1", f"DB_PASSWORD={REDACTED}"),
            ('export API_KEY="fake value"', f'export API_KEY="{REDACTED}"'),
            ("export GH_TOKEN='fakefake'", f"export GH_TOKEN='{REDACTED}'"),
            ("AWS_SECRET_ACCESS_KEY = fakeFAKEfake", f"AWS_SECRET_ACCESS_KEY = {REDACTED}"),
            ("PGPASSWORD=fakepass psql -h db", f"PGPASSWORD={REDACTED} psql -h db"),
            (
                "DB_PASSWORD=fake1234 API_TOKEN=fake5678 ./run",
                f"DB_PASSWORD={REDACTED} API_TOKEN={REDACTED} ./run",
            ),
            ("NPM_AUTH=ZmFrZWZha2U=", f"NPM_AUTH={REDACTED}"),
            ("_auth=ZmFrZWZha2U=", f"_auth={REDACTED}"),
            ('password=""', f'password="{REDACTED}"'),
        ],
    )
    def test_env_form(self, text: str, expected: str) -> None:
        """`KEY=v` and `export KEY="v"`: the value ends at whitespace, every pair is masked."""
        assert redact_assignments(text) == expected

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("password: my fake pass phrase", f"password: {REDACTED}"),
            ("client_secret: fake # comment", f"client_secret: {REDACTED}"),
            ('api_key: "fakefake"', f'api_key: "{REDACTED}"'),
            ("  refresh_token: 'fake'", f"  refresh_token: '{REDACTED}'"),
            ("auth: fakefake", f"auth: {REDACTED}"),
            ("passphrase: correct fake battery", f"passphrase: {REDACTED}"),
            ("API Key: fakefake", f"API Key: {REDACTED}"),
            ("Secret Key: fakefake", f"Secret Key: {REDACTED}"),
            (
                "db:\n  password: fake pw\n  host: db.invalid",
                f"db:\n  password: {REDACTED}\n  host: db.invalid",
            ),
        ],
    )
    def test_yaml_form(self, text: str, expected: str) -> None:
        """`key: v`: the value runs to the end of the line and the next line is kept."""
        assert redact_assignments(text) == expected

    @pytest.mark.parametrize(
        ("document", "expected"),
        [
            ('{"password": "fake", "n": 1}', f'{{"password": "{REDACTED}", "n": 1}}'),
            ('{"password": 12345678}', f'{{"password": "{REDACTED}"}}'),
            ('{"token": 123456}', f'{{"token": "{REDACTED}"}}'),
            ('{"api_key":"fa\\"ke","x":2}', f'{{"api_key":"{REDACTED}","x":2}}'),
            ('{"db": {"client_secret": "fake"}}', f'{{"db": {{"client_secret": "{REDACTED}"}}}}'),
            ('{"note": "password: fakefake"}', f'{{"note": "password: {REDACTED}"}}'),
            ('{"Env": ["GH_TOKEN=fakefake"]}', f'{{"Env": ["GH_TOKEN={REDACTED}"]}}'),
        ],
    )
    def test_json_form(self, document: str, expected: str) -> None:
        """`"key": "v"` keeps its quotes; a bare value becomes a quoted marker; JSON stays JSON."""
        out = REDACTOR(document)
        assert out == expected
        json.loads(out)

    @pytest.mark.parametrize(
        "document", ['{"password": null}', '{"password": true}', '{"secret": false, "x": 1}']
    )
    def test_json_literals_are_not_secrets(self, document: str) -> None:
        """`null`, `true` and `false` after a secret key are left as they are."""
        assert REDACTOR(document) == document

    def test_python_dict_single_quotes(self) -> None:
        """`{'key': 'v'}` keeps its single quotes, and a bare number is quoted the same way."""
        text = "{'api_key': 'fake1234', 'password': 12345678, 'n': 1}"
        expected = f"{{'api_key': '{REDACTED}', 'password': '{REDACTED}', 'n': 1}}"
        assert REDACTOR(text) == expected

    def test_json_escaped_inside_a_string(self) -> None:
        """`\\"client_secret\\": \\"x\\"` inside a JSON string is masked and stays escaped."""
        inner = json.dumps({"client_secret": "fakefake", "password": 12345678})
        outer = json.dumps({"body": inner})
        out = REDACTOR(outer)
        assert json.loads(json.loads(out)["body"]) == {
            "client_secret": REDACTED,
            "password": REDACTED,
        }

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("deploy --password fakepass", f"deploy --password {REDACTED}"),
            ("deploy --token=fake1234 --verbose", f"deploy --token={REDACTED} --verbose"),
            ('login --api-key "fake key"', f'login --api-key "{REDACTED}"'),
            ("run -client-secret fakefake", f"run -client-secret {REDACTED}"),
            ("run --token --json", "run --token --json"),
            ("run --token [fake-list]", f"run --token {REDACTED}"),
            ('["deploy", "--token", "fake1234"]', f'["deploy", "--token", "{REDACTED}"]'),
            ("['deploy', '--password', 'fakepass']", f"['deploy', '--password', '{REDACTED}']"),
            (
                '["--token=fake1234","--password=fake5678"]',
                f'["--token={REDACTED}","--password={REDACTED}"]',
            ),
        ],
    )
    def test_cli_flags(self, text: str, expected: str) -> None:
        """`--flag v`, `--flag=v` and argv lists: the value goes, the next option stays."""
        assert REDACTOR(text) == expected

    def test_short_and_boolean_values_are_kept(self) -> None:
        """Values under four characters and yes/no words carry no secret."""
        text = "password: abc\ntoken=on\nsecret: none\n--token yes"
        assert REDACTOR(text) == text

    def test_token_counts_are_numbers_not_secrets(self) -> None:
        """Numbers under keys that count tokens are kept; under a bare `token` they are not."""
        counts = "max_tokens: 4096\ntoken_limit: 8192\nnum_tokens=512\n--max-tokens 100"
        assert REDACTOR(counts) == counts
        assert REDACTOR('{"max_tokens": 4096}') == '{"max_tokens": 4096}'
        assert REDACTOR("session_token: 48213377") == f"session_token: {REDACTED}"


class TestPrivateSpans:
    """`<private>` spans are removed whole, fail closed."""

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("a <private>fake</private> b", f"a {PRIVATE} b"),
            ("a <PRIVATE>fake</Private> b", f"a {PRIVATE} b"),
            ("a < private >fake</ private > b", f"a {PRIVATE} b"),
            ('a <private reason="pii" id=7>fake</private> b', f"a {PRIVATE} b"),
            ("a <private>x<private>y</private>z</private> b", f"a {PRIVATE} b"),
            ("a <private>1</private> b <private>2</private> c", f"a {PRIVATE} b {PRIVATE} c"),
            ("a </private> b", "a  b"),
            ("a <private>fake\nmore", f"a {PRIVATE}"),
            ("a <private", f"a {PRIVATE}"),
            ("a <private/> b", "a  b"),
            ("a <private /> b <private>x</private>", f"a  b {PRIVATE}"),
            ("multi\n<private>line\nspan</private>\nend", f"multi\n{PRIVATE}\nend"),
        ],
        ids=[
            "simple",
            "case_insensitive",
            "spaces_in_tags",
            "attributes",
            "nested_removed_with_parent",
            "two_spans",
            "orphan_closing_dropped",
            "unclosed_suppresses_rest",
            "unterminated_tag",
            "self_closing_removes_nothing",
            "self_closing_then_span",
            "multiline",
        ],
    )
    def test_spans(self, text: str, expected: str) -> None:
        """Each span form is handled as docs/design/redaction.md says."""
        assert strip_private(text) == expected
        assert REDACTOR(text) == expected

    def test_nested_inner_close_does_not_end_the_outer_span(self) -> None:
        """Text between an inner and the outer closing tag is still private."""
        out = REDACTOR("<private>a<private>b</private>LEAK</private>")
        assert "LEAK" not in out
        assert out == PRIVATE

    def test_words_that_merely_contain_private_are_kept(self) -> None:
        """`<privateKey>` and prose about private things are not tags."""
        text = "the <privateKey> element is private"
        assert REDACTOR(text) == text


class TestLiterals:
    """Configured literals, longest first, before any pattern."""

    def test_literal_is_replaced_everywhere(self) -> None:
        """Every occurrence goes, in any context."""
        rule = literal_rule(["tenant-fake-0042"])
        assert rule("a tenant-fake-0042 b tenant-fake-0042") == f"a {REDACTED} b {REDACTED}"

    def test_longest_first(self) -> None:
        """A literal containing another is removed whole, not split at the shorter one."""
        redactor = Redactor(["fake-short", "fake-short-and-longer"])
        assert redactor("x fake-short-and-longer y") == f"x {REDACTED} y"
        assert redactor("x fake-short y") == f"x {REDACTED} y"
        reversed_order = Redactor(["fake-short-and-longer", "fake-short"])
        assert reversed_order("x fake-short-and-longer y") == f"x {REDACTED} y"

    def test_literals_run_before_patterns(self) -> None:
        """A literal that contains a token shape is removed whole, not cut by the pattern."""
        literal = f"vault:{AWS_KEY_ID}:v2"
        assert Redactor([literal])(f"use {literal} now") == f"use {REDACTED} now"

    def test_empty_literal_is_ignored(self) -> None:
        """An empty literal would match everywhere; it is dropped."""
        assert Redactor(["", "fakefake"])("ab fakefake") == f"ab {REDACTED}"


PRECISION = [
    "the bearer authentication scheme",
    "Bearer tokens are described in RFC 6750",
    "max_tokens: 4096",
    "tokenizer: bpe",
    "tokenizer: sentencepiece",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "ev_01J9ZB3XW6Q8K1Y2V3T4R5S6N7 and task_01J9ZB3XW6Q8K1Y2V3T4R5S6N7",
    "risk-assessment",
    "ask-before-merging and task-runner",
    "author: Jane Doe",
    "oauth: enabled via the identity provider",
    "password reset flow is broken",
    "the token was rejected",
    "def check_password(user, password):\n    return hash(password) == user.pw_hash",
    "if token is None:\n    raise ValueError('missing')",
    "x = compute(api, key)  # secrets live in the vault",
    "SELECT id FROM users WHERE email = 'a@example.invalid'",
    'Traceback (most recent call last):\n  File "app.py", line 3, in <module>',
    "ACCOUNT_SID is fine to log",
]


class TestPrecision:
    """Ordinary text, code, ids and hashes pass through unchanged."""

    @pytest.mark.parametrize("text", PRECISION)
    def test_unchanged(self, text: str) -> None:
        """The pipeline returns the text exactly as given."""
        assert REDACTOR(text) == text
        assert not REDACTOR.looks_secret(text)

    def test_plain_text_compiles_no_pattern(self) -> None:
        """Text without a trigger costs substring checks only: no regex is compiled or run."""
        caches = [
            redact._token_pattern,
            redact._header_patterns,
            redact._assignment_patterns,
            redact._private_tag,
        ]
        for cached in caches:
            cached.cache_clear()
        try:
            REDACTOR("Fix the login redirect after the session expires (see app.py line 42).")
            assert [cached.cache_info().currsize for cached in caches] == [0, 0, 0, 0]
            REDACTOR("password: fakefake")
            assert redact._assignment_patterns.cache_info().currsize == 1
            assert redact._token_pattern.cache_info().currsize == 0
        finally:
            for cached in caches:
                cached.cache_clear()


PATHOLOGICAL = {
    "key_word_run": "-token" * 21_845,
    "underscore_key_run": "x" + "_token" * 21_845,
    "backslashes_after_a_key": "password: " + "\\" * 131_072,
    "backslashes_after_a_pem_header": "-----BEGIN RSA PRIVATE KEY-----\n" + "\\" * 131_072,
    "jwt_prefix_run": "eyJ-" * 32_768,
    "backslash_run_before_a_quoted_key": "\\" * 131_072 + '"token": 1',
    "deeply_escaped_keys": ("\\" * 40 + '"token') * 2_849,
    # The escaped reading (issue 18): quotes that never close, escapes everywhere, many secrets
    # in one escaped string, a run of backslashes ending in an escape letter.
    "stray_escaped_quotes": ('"a\\"' * 32_768)[:131_072],
    "escaped_newlines": ("\\n" * 65_536),
    "secrets_in_one_escaped_string": '"' + ("password=FAKEfake12\\n" * 6_000)[:131_070] + '"',
    "escaped_private_tags": ("x\\u003c/private\\u003e</private>" * 4_000)[:131_072],
    "backslash_run_then_n": "password: " + "\\" * 131_061 + "n",
    "continuations": ("token=a\\\n" * 14_563)[:131_072],
    # Command-line credentials: every tool name starts a scan to its command's end.
    "curl_option_run": ("curl -" * 21_846)[:131_072],
    "mysql_names": ("mysql -p" * 16_384)[:131_072],
    # An option cluster of `u`s: each one could start curl's user scan again (issue 27's attack).
    "curl_u_cluster": "curl -" + "u" * 131_066,
    "sshpass_options": ("sshpass" + " -P 'x" * 21_846)[:131_072],
    "sshpass_argv_list": ("sshpass" + '", "-P", "x' * 13_108)[:131_072],
    "sshpass_variables": ("SSHPASS='" * 14_564)[:131_072],
}


class TestCost:
    """Redaction is linear: no input makes it backtrack for minutes while a case lock is held."""

    @pytest.mark.parametrize("text", PATHOLOGICAL.values(), ids=PATHOLOGICAL.keys())
    def test_pathological_128_kib_inputs_are_fast(self, text: str) -> None:
        """Inputs that used to backtrack quadratically (minutes for 128 KiB) take well under 2 s."""
        started = time.perf_counter()
        out = REDACTOR(text)
        assert time.perf_counter() - started < 2.0
        assert REDACTOR(out) == out


class TestLooksSecret:
    """`looks_secret` is true exactly when redaction would change the text."""

    @pytest.mark.parametrize(
        "value",
        [
            GITHUB_CLASSIC,
            AWS_KEY_ID,
            OPENAI_KEY,
            "token:fakefake",
            "a<private>b",
            "x</private>",
            f"src/{GITLAB}/config.py",
            "tenant-fake-0042",
        ],
    )
    def test_true(self, value: str) -> None:
        """Secret-looking identifiers (and configured literals) are flagged."""
        assert Redactor(["tenant-fake-0042"]).looks_secret(value)

    @pytest.mark.parametrize(
        "value",
        ["cli", "claude-code", "agent:reviewer", "src/app.py", "c1", "retry-7f3a", "pytest", "sk"],
    )
    def test_false(self, value: str) -> None:
        """Plain names are not flagged."""
        assert not Redactor(["tenant-fake-0042"]).looks_secret(value)


class TestRedactBytes:
    """Raw blobs: text is redacted, bytes that are not UTF-8 survive unchanged."""

    def test_clean_bytes_come_back_unchanged(self) -> None:
        """Nothing to redact: the very same bytes are returned."""
        data = b"\xff\xfe plain output \x80"
        assert REDACTOR.redact_bytes(data) == data

    def test_utf8_text_is_redacted(self) -> None:
        """Ordinary UTF-8 (with non-ASCII) is redacted like text."""
        data = f"caf\u00e9 {GITHUB_CLASSIC} \u2713".encode()
        assert REDACTOR.redact_bytes(data) == f"caf\u00e9 {REDACTED} \u2713".encode()

    @DETERMINISTIC
    @given(st.binary(max_size=64), st.binary(max_size=64))
    def test_non_utf8_bytes_survive_around_a_key(self, head: bytes, tail: bytes) -> None:
        """Arbitrary bytes around an embedded AWS key survive byte for byte; the key does not."""
        data = head + b"\xff " + AWS_KEY_ID.encode() + b" \xc3" + tail
        out = REDACTOR.redact_bytes(data)
        assert AWS_KEY_ID.encode() not in out
        assert out == head + b"\xff " + REDACTED.encode() + b" \xc3" + tail


# Properties ----------------------------------------------------------------------------------

# Pieces that exercise every rule, its quoting and its edges; mixed with arbitrary text.
FRAGMENTS = [
    "password",
    "token",
    "api_key",
    "client_secret",
    "auth",
    "API Key",
    "max_tokens",
    "tokenizer",
    ": ",
    "=",
    " ",
    "\n",
    "\t",
    '"',
    "'",
    "\\",
    '\\"',
    ",",
    "{",
    "}",
    "[",
    "]",
    "--token ",
    "--password=",
    "export ",
    "Authorization: ",
    "Bearer ",
    "Basic ",
    "https://u:",
    "redis://:",
    "@",
    "12345678",
    "fakefake",
    "null",
    "<private>",
    "</private>",
    "<private/>",
    "<PRIVATE a='1'>",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----",
    # Tokens are matched at word boundaries: they come with a separator on each side.
    f" {AWS_KEY_ID} ",
    f"({GITHUB_CLASSIC})",
    f"={OPENAI_KEY},",
    f'"{SLACK_BOT}"',
    f" {JWT}\n",
    " SK" + fill(32, "fa4e") + " ",
    "tenant-fake-0042",
]
LITERAL_REDACTOR = Redactor(["tenant-fake-0042"])
fragment_text = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=6), max_size=14).map("".join)

SECRET_KEYS = [
    "password",
    "api_key",
    "client_secret",
    "token",
    "access_token",
    "DB_PASSWORD",
    "x-api-key",
    "privateKey",
    "secret",
    "auth",
    "credentials",
]
# Fragments that keep a JSON document JSON: not `<private>` (an unclosed span removes the rest of
# the text by design) and not PEM headers (a BEGIN without END runs to the end of its string).
JSON_FRAGMENTS = [f for f in FRAGMENTS if "private" not in f.lower()]
json_text = st.lists(st.sampled_from(JSON_FRAGMENTS) | st.text(max_size=6), max_size=10).map(
    "".join
)
plain_keys = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True).filter(
    lambda key: (
        not LITERAL_REDACTOR.looks_secret(f"{key}=fakefake")
        and not LITERAL_REDACTOR.looks_secret(f"{key}: fakefake")
    )
)
scalars = (
    json_text
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans()
    | st.none()
)
secret_values = (
    st.text(max_size=20)
    | json_text
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
)


@st.composite
def documents(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A JSON object with secret-named keys (returned separately) among ordinary ones."""
    secrets = draw(st.dictionaries(st.sampled_from(SECRET_KEYS), secret_values, min_size=1))
    others = draw(
        st.dictionaries(
            plain_keys,
            scalars | st.lists(scalars, max_size=3) | st.dictionaries(plain_keys, scalars),
            max_size=4,
        )
    )
    items = [*secrets.items(), *others.items()]
    order = draw(st.permutations(items))
    return dict(order), secrets


def _long_enough(value: object) -> bool:
    """Whether a secret value is long enough that the pipeline promises to remove it."""
    return isinstance(value, str) or len(json.dumps(value)) >= 4


class TestProperties:
    """Properties over generated input (fixed seed)."""

    @DETERMINISTIC
    @given(st.text())
    def test_idempotent_on_arbitrary_text(self, text: str) -> None:
        """Redacting twice is redacting once."""
        once = LITERAL_REDACTOR(text)
        assert LITERAL_REDACTOR(once) == once

    @DETERMINISTIC
    @given(fragment_text)
    def test_idempotent_on_secret_like_text(self, text: str) -> None:
        """Redacting twice is redacting once, also for text built from every rule's pieces."""
        once = LITERAL_REDACTOR(text)
        assert LITERAL_REDACTOR(once) == once

    @DETERMINISTIC
    @given(fragment_text)
    def test_output_never_contains_a_known_secret(self, text: str) -> None:
        """No token, literal or PEM header survives, whatever surrounds it."""
        out = LITERAL_REDACTOR(text)
        for secret in (AWS_KEY_ID, GITHUB_CLASSIC, OPENAI_KEY, SLACK_BOT, JWT, "tenant-fake-0042"):
            assert secret not in out
        assert "PRIVATE KEY-----" not in out.replace("-----END RSA PRIVATE KEY-----", "")

    @DETERMINISTIC
    @given(documents(), st.booleans(), st.sampled_from([None, 2]))
    def test_json_stays_json_and_loses_its_secrets(
        self, document: tuple[dict[str, Any], dict[str, Any]], ascii_only: bool, indent: int | None
    ) -> None:
        """A JSON object stays valid JSON with the same keys, and every secret value is masked."""
        obj, secrets = document
        text = json.dumps(obj, ensure_ascii=ascii_only, indent=indent)
        out = LITERAL_REDACTOR(text)
        parsed = json.loads(out)
        assert isinstance(parsed, dict)
        assert list(parsed) == list(obj)
        for key, value in secrets.items():
            if _long_enough(value):
                assert parsed[key] == REDACTED, (key, value, out)
        assert LITERAL_REDACTOR(out) == out

    @DETERMINISTIC
    @given(
        st.from_regex(r"[a-z0-9._:@+-]{0,12}", fullmatch=True),
        st.sampled_from([GITHUB_CLASSIC, AWS_KEY_ID, OPENAI_KEY, GITLAB, STRIPE_SECRET]),
        st.from_regex(r"[a-z0-9._:@+-]{0,12}", fullmatch=True),
    )
    def test_token_inside_any_identifier_looks_secret(
        self, head: str, secret: str, tail: str
    ) -> None:
        """A token between the slashes of an identifier (actor, file, tool) is always flagged."""
        assert LITERAL_REDACTOR.looks_secret(f"{head}/{secret}/{tail}")


class TestMarkers:
    """The markers themselves."""

    def test_markers_are_inert(self) -> None:
        """The markers contain no quote or backslash, and a masked value is never masked again."""
        for marker in (REDACTED, PRIVATE):
            assert not re.search(r"[\"'\\]", marker)
            for text in (marker, f"password: {marker}", f"TOKEN={marker} x"):
                assert REDACTOR(text) == text
        for text in (
            f'{{"token": "{REDACTED}"}}',
            f"Authorization: Bearer {REDACTED}",
            f"--token {REDACTED}",
        ):
            assert REDACTOR(text) == text


# Escaped text (issue 18, item 1) -------------------------------------------------------------


def json_escaped(text: str, *, ascii_only: bool = True) -> str:
    """`text` as a JSON string literal (quotes included)."""
    return json.dumps(text, ensure_ascii=ascii_only)


class TestEscapedText:
    """Text kept in an escaped form (JSON strings, Python reprs) is redacted as if unescaped."""

    def test_structured_log_line_in_a_raw_blob(self) -> None:
        """A JSON log whose message holds env lines: both values go, the line stays JSON."""
        line = (
            '{"level":"info","msg":"loaded env\\nDB_PASSWORD=JsonLogPw123456\\n'
            'API_TOKEN=JsonLogTok98765\\n"}'
        )
        out = REDACTOR(line)
        assert "JsonLogPw123456" not in out
        assert "JsonLogTok98765" not in out
        assert json.loads(out) == {
            "level": "info",
            "msg": f"loaded env\nDB_PASSWORD={REDACTED}\nAPI_TOKEN={REDACTED}\n",
        }

    def test_a_literal_backslash_n_in_a_claim(self) -> None:
        """`x \\npassword = v` typed with a real backslash is read as the two lines it means."""
        assert REDACTOR("x \\npassword = Hunter2Hunter2A3") == f"x \\npassword = {REDACTED}"

    def test_a_repr_quoted_value_in_an_error_message(self) -> None:
        """An error message quoting a bad value with repr() loses the password inside it."""
        bad = "[database]\npassword = Hunter2Hunter2Kd\n"
        message = f"--kind must be one of a, b, not {bad!r}"
        out = REDACTOR(message)
        assert "Hunter2Hunter2Kd" not in out
        assert out == f"--kind must be one of a, b, not '[database]\\npassword = {REDACTED}\\n'"

    @pytest.mark.parametrize(
        ("escaped", "secret"),
        [
            ("db:\\tpassword:\\tTabbedPw12345", "TabbedPw12345"),
            ("\\u001b[0mDB_PASSWORD=AnsiLogPw12345\\u001b[0m", "AnsiLogPw12345"),
            ("said \\u003cprivate\\u003eGoEscaped999\\u003c/private\\u003e ok", "GoEscaped999"),
            ("export TOKEN=\\u0022QuotedTok12345\\u0022", "QuotedTok12345"),
            ("run \\u002d-password EscapedDash123 now", "EscapedDash123"),
            ("dsn https:\\/\\/app:SlashedPw12345@db.example.invalid\\/x", "SlashedPw12345"),
            ("caf\\u00e9\\rsecret: CarriageRet12345", "CarriageRet12345"),
            ("emoji \\ud83d\\ude00\\npassword=SurrogatePw1234", "SurrogatePw1234"),
            ("repr '\\x1b[31mAPI_KEY=HexEscaped12345'", "HexEscaped12345"),
        ],
        ids=["tab", "ansi_u_escape", "html_safe_json", "u_quote", "u_dash", "escaped_slashes",
             "carriage_return", "surrogate_pair", "python_hex_escape"],
    )  # fmt: skip
    def test_every_escape_form(self, escaped: str, secret: str) -> None:
        """JSON's and Python's escapes are all read through; the escaping itself is kept."""
        out = REDACTOR(escaped)
        assert secret not in out
        assert REDACTED in out or PRIVATE in out
        assert REDACTOR(out) == out

    def test_escapes_around_the_secret_are_kept_as_written(self) -> None:
        """Only the value changes: every escape before and after it is left as it was."""
        text = "caf\\u00e9 \\t x\\npassword: EscapedPw12345\\n\\u00e9t\\u00e9 \\\\ done"
        assert REDACTOR(text) == (
            f"caf\\u00e9 \\t x\\npassword: {REDACTED}\\n\\u00e9t\\u00e9 \\\\ done"
        )

    def test_nested_json_strings_are_read_level_by_level(self) -> None:
        """A JSON log kept inside a JSON string (escaped twice) is still read through."""
        inner = json.dumps({"msg": "boot\nDB_PASSWORD=NestedPw12345\n"})
        document = json.dumps({"stdout": inner})
        out = REDACTOR(document)
        assert "NestedPw12345" not in out
        assert json.loads(json.loads(out)["stdout"]) == {"msg": f"boot\nDB_PASSWORD={REDACTED}\n"}

    def test_a_quoted_key_with_a_bare_value_inside_a_string_stays_json(self) -> None:
        """A marker quoted to keep an escaped document parseable is quoted at its level."""
        document = json.dumps({"log": "{\n" + '"password": 12345678' + "\n}"})
        out = REDACTOR(document)
        assert "12345678" not in out
        assert json.loads(json.loads(out)["log"]) == {"password": REDACTED}

    @pytest.mark.parametrize(
        "text",
        [
            "C:\\Users\\dev\\new\\tokens.txt",
            'printf "%s\\n" "$x"',
            "regex \\d+\\s*=\\s*\\w+",
            '{"msg": "line one\\nline two\\ttabbed \\u00e9"}',
            "trailing backslash \\",
            'escaped quote \\" and backslash \\\\',
        ],
    )
    def test_escaped_text_without_secrets_is_returned_as_is(self, text: str) -> None:
        """Reading through escapes never rewrites text that hides nothing."""
        assert REDACTOR(text) == text


# Strings the pipeline redacts: secret-bearing lines of every rule (values long enough to be
# masked), prose, non-ASCII and control characters, each followed by a separator.
ESCAPE_VALUES = ["FAKEvalue0123456789", "FAKEother987654321"]
ESCAPE_PIECES = [
    "DB_PASSWORD={v}",
    'export API_KEY="{v}"',
    "password: {v}",
    '{{"token": "{v}"}}',
    "--token {v}",
    "--token={v}",
    "Authorization: Bearer {v}7",
    AWS_KEY_ID,
    GITHUB_CLASSIC,
    pem("RSA "),
    "<private>{v}</private>",
    "postgres://app:{v}@db.example.invalid/x",
    "secret_key = '{v}'",
    "'auth': '{v}'",
    '{{"password": 12345678}}',
    '["--api-key", "{v}"]',
    'client_secret: "{v}"',
    "max_tokens: 4096",
    "tenant-fake-0042",
    "[database]",
    "loaded env",
    "café naïve",
    "\x1b[0m",
    "\u2028",
    "it's",
    'say "hi"',
    "a\\b",
    "x=1",
]
ESCAPE_SEPARATORS = ["\n", "\t", " ", "\r\n", ", ", "\n\n", "; "]


@st.composite
def redactable_text(draw: st.DrawFn) -> str:
    """Secret-bearing pieces and prose, separated as logs and configuration files are."""
    pieces = draw(st.lists(st.sampled_from(ESCAPE_PIECES), max_size=8))
    return "".join(
        piece.format(v=draw(st.sampled_from(ESCAPE_VALUES)))
        + draw(st.sampled_from(ESCAPE_SEPARATORS))
        for piece in pieces
    )


class TestEscapingCommutes:
    """Escaping and redacting commute: what is stored escaped is redacted as if it were not."""

    @DETERMINISTIC
    @given(redactable_text(), st.booleans())
    def test_json_escaping_then_redacting_is_redacting_then_escaping(
        self, text: str, ascii_only: bool
    ) -> None:
        """`redact(json(s)) == json(redact(s))`, and no secret value is left in either."""
        escaped = LITERAL_REDACTOR(json.dumps(text, ensure_ascii=ascii_only))
        assert escaped == json.dumps(LITERAL_REDACTOR(text), ensure_ascii=ascii_only)
        for secret in [*ESCAPE_VALUES, AWS_KEY_ID, GITHUB_CLASSIC, "tenant-fake-0042"]:
            assert secret not in escaped
        assert "PRIVATE KEY-----" not in escaped.replace("-----END RSA PRIVATE KEY-----", "")

    @DETERMINISTIC
    @given(redactable_text(), st.booleans())
    def test_the_same_inside_a_json_document(self, text: str, ascii_only: bool) -> None:
        """A string value of a JSON document (a log record) is redacted as the string alone is."""
        document = {"level": "info", "msg": text, "n": 1}
        out = LITERAL_REDACTOR(json.dumps(document, ensure_ascii=ascii_only))
        expected = {**document, "msg": LITERAL_REDACTOR(text)}
        assert out == json.dumps(expected, ensure_ascii=ascii_only)

    @DETERMINISTIC
    @given(
        st.lists(
            st.sampled_from([*FRAGMENTS, "\\n", "\\u00e9", "\\x41", "\\/"]) | st.text(max_size=4),
            max_size=16,
        ).map("".join)
    )
    def test_idempotent_with_escapes(self, text: str) -> None:
        """Reading through escapes keeps redaction idempotent."""
        once = LITERAL_REDACTOR(text)
        assert LITERAL_REDACTOR(once) == once


class TestLineContinuation:
    """A secret split by a backslash-newline shell continuation is redacted like the joined line."""

    @pytest.mark.parametrize(
        ("text", "parts"),
        [
            ("deploy --token abcFAKE\\\ndefFAKE123 --yes", ["abcFAKE", "defFAKE123"]),
            ("export API_KEY=FAKEhead\\\nFAKEtail99", ["FAKEhead", "FAKEtail99"]),
            ("curl -H 'Authorization: Bearer FAKEbear\\\r\ner0123456789'", ["FAKEbear"]),
            ("DB_PASSWORD=FAKEone\\\nFAKEtwo\\\nFAKEthree ./run", ["FAKEone", "FAKEthree"]),
        ],
        ids=["flag", "env", "crlf", "twice"],
    )
    def test_split_secret_goes_whole(self, text: str, parts: list[str]) -> None:
        """Neither half survives; the continuation inside the secret goes with it."""
        out = REDACTOR(text)
        assert [p for p in parts if p in out] == []
        assert REDACTED in out

    def test_the_rest_of_the_command_keeps_its_continuations(self) -> None:
        """Continuations outside a secret stay exactly where they were."""
        text = "docker run \\\n  --rm \\\n  --password FAKEpass\\\nword12 \\\n  image:latest"
        assert (
            REDACTOR(text)
            == f"docker run \\\n  --rm \\\n  --password {REDACTED} \\\n  image:latest"
        )

    def test_continuation_alone_is_kept(self) -> None:
        """A continued command without secrets is unchanged."""
        text = "make \\\n  test \\\n  lint"
        assert REDACTOR(text) == text


# Cut private keys (issue 18, item 2) --------------------------------------------------------

KEY_LINES = [fill(64, unit) for unit in ("FAKEfake0123", "fakeFAKE+/45", "FaKe6789fAkE")]
KEY_LINES.append(fill(22, "fAKE") + "==")
CUT_TEXT = (
    "collected 3 items\nprinting the fixture key:\n-----BEGIN RSA PRIVATE KEY-----\n"
    + "\n".join(KEY_LINES)
    + "\n-----END RSA PRIVATE KEY-----\ntests: 3 passed in 0.2s\n"
)


def key_fragments(text: str, size: int = 12) -> list[str]:
    """Every piece of `size` characters of a key line that occurs in `text`."""
    return [
        line[i : i + size]
        for line in KEY_LINES
        for i in range(len(line) - size + 1)
        if line[i : i + size] in text
    ]


class TestCutKeys:
    """A private-key block cut anywhere leaves no key line: not before, not after the cut."""

    @DETERMINISTIC
    @given(st.integers(0, len(CUT_TEXT)))
    def test_a_block_cut_at_any_offset_leaves_no_key_line(self, offset: int) -> None:
        """What is kept before a cut (a preview's head) or after it (a tail) holds no key."""
        for kept in (CUT_TEXT[:offset], CUT_TEXT[offset:]):
            assert key_fragments(REDACTOR(kept)) == [], (offset, kept)

    @DETERMINISTIC
    @given(st.integers(0, len(CUT_TEXT)), st.integers(0, len(CUT_TEXT)))
    def test_a_head_and_tail_cut_leaves_no_key_line(self, first: int, second: int) -> None:
        """Head and tail around a dropped middle, as the verifier runner keeps long output."""
        head, tail = sorted((first, second))
        kept = CUT_TEXT[:head] + "\n[... 100 bytes omitted ...]\n" + CUT_TEXT[tail:]
        assert key_fragments(REDACTOR(kept)) == [], (head, tail)

    @DETERMINISTIC
    @given(st.integers(0, len(CUT_TEXT)), st.booleans())
    def test_the_same_inside_a_json_string(self, offset: int, ascii_only: bool) -> None:
        """A cut key kept inside a JSON string (a tool's JSON output) is masked there too."""
        for kept in (CUT_TEXT[:offset], CUT_TEXT[offset:]):
            document = json.dumps({"stdout": kept, "n": 1}, ensure_ascii=ascii_only)
            out = REDACTOR(document)
            assert key_fragments(out) == [], (offset, out)
            assert json.loads(out)["n"] == 1


# Quoting a cut value (issue 18, item 1) ------------------------------------------------------


class TestClip:
    """A value cut short for an error message is cut between words, never inside one."""

    def test_short_text_is_kept_whole(self) -> None:
        """Nothing to cut: the text comes back as it is."""
        assert redact.clip("fits", 4) == "fits"

    def test_a_cut_inside_a_word_drops_that_word(self) -> None:
        """The word the cut falls in goes whole, and `...` says something was cut."""
        assert redact.clip("one two three", 11) == "one two ..."
        assert redact.clip("one two three", 9) == "one ..."

    def test_a_cut_between_words_keeps_every_word_before_it(self) -> None:
        """A cut at a space loses nothing before it; the result fits the limit."""
        assert redact.clip("one two three", 12) == "one two ..."
        assert redact.clip("one two three", 10) == "one two..."
        for limit in range(13):
            assert len(redact.clip("one two three", limit)) <= max(limit, 3)

    def test_a_token_cut_in_two_leaves_nothing_of_itself(self) -> None:
        """Cut inside a token, a quoted value keeps no prefix of it: redaction could not see it."""
        value = "x" * 30 + " " + GITHUB_CLASSIC
        for limit in range(31, len(value)):
            shown = redact.clip(value, limit)
            assert "ghp_" not in shown, limit
            assert REDACTOR(shown) == shown

    def test_a_tiny_limit_keeps_nothing_but_the_mark(self) -> None:
        """Under four characters there is room for `...` only, even before a space.

        Kills `end = max(limit - 3, 0)` -> `max(limit - 3, 1)` (`a bc` cut to 3 was `a...`,
        longer than its limit).
        """
        for limit in range(4):
            assert redact.clip("a bc", limit) == "..."

    def test_a_secret_known_only_past_the_cut_is_masked_before_it(self) -> None:
        """A PEM key's tail is known by its END line: cut before it, its lines were kept."""
        body = "FAKEkeyline" + "0" * 53
        tail = f"tail of a key:\n{body}\n{body}\n-----END RSA PRIVATE KEY-----\nend"
        shown = redact.clip(tail, 100)  # the first key line fits whole
        assert "FAKEkeyline" not in shown
        assert shown.startswith("tail of a key:")

    def test_a_huge_text_costs_no_more_than_its_kept_part(self) -> None:
        """An MCP argument has no size bound: clip redacted all of it (8 MiB took 10 s).

        Only what can reach the kept part is read: the cut and a look-ahead past it.
        """
        text = PATHOLOGICAL["secrets_in_one_escaped_string"] * 64
        started = time.perf_counter()
        redact.clip(text, 80)
        assert time.perf_counter() - started < 2.0
        # What lies past the look-ahead is still shown as cut.
        far = "<private>" + "x " * redact.CLIP_LOOK_AHEAD + "tail"
        assert redact.clip(far, 50) == "[PRIVATE]..."

    def test_a_key_tail_within_the_look_ahead_is_still_masked(self) -> None:
        body = "FAKEkeyline" + "0" * 53
        tail = f"tail of a key:\n{body}\n" + f"{'0' * 64}\n" * 200 + "-----END RSA PRIVATE KEY-----"
        shown = redact.clip(tail + " padding" * 100_000, 100)
        assert "FAKEkeyline" not in shown
        assert shown.startswith("tail of a key:")

    def test_one_long_word_is_dropped(self) -> None:
        """A value without any space, longer than the limit, is shown as `...` only."""
        assert redact.clip("x" * 30, 10) == "..."
        # A secret is masked before the cut: its marker may then fit.
        assert redact.clip(AWS_KEY_ID, 10) == REDACTED


# What mutation testing found unpinned (issue 21) ---------------------------------------------
#
# Each test names the mutant it kills: a one-line diff of cortex/cases/redact.py, or a word
# dropped from a word list by tests/mutation/wordlists.py (docs/testing.md).


class TestLiteralOrder:
    """Configured literals go longest first, whatever order they come in."""

    def test_a_literal_inside_a_longer_one_never_splits_it(self) -> None:
        """`abcd1234ef` and `zz123456`-in-`azz123456b` go whole, the shorter inside them too.

        Kills `sorted(..., key=len, reverse=True)` -> `sorted(..., key=len)` (the text became
        `a[REDACTED]ef`, leaking part of the literal) and -> `sorted(..., reverse=True)` (by
        letters, `zz123456` sorts before `azz123456b`, and `a[REDACTED]b` was left).
        """
        for literals in (["bcd1234", "abcd1234ef"], ["abcd1234ef", "bcd1234"]):
            assert literal_rule(literals)("abcd1234ef") == REDACTED
        for literals in (["zz123456", "azz123456b"], ["azz123456b", "zz123456"]):
            assert literal_rule(literals)("x azz123456b y") == f"x {REDACTED} y"
            assert literal_rule(literals)("x zz123456 y") == f"x {REDACTED} y"


ASSIGN_WORD_CASES = [
    ("passwd", "DB_PASSWD=FAKEvalue123", f"DB_PASSWD={REDACTED}"),
    ("pwd", "MYSQL_PWD=FAKEvalue123", f"MYSQL_PWD={REDACTED}"),
    ("apikey", "APIKEY=FAKEvalue123", f"APIKEY={REDACTED}"),
    ("private_key", "SSH_PRIVATE_KEY=FAKEvalue123", f"SSH_PRIVATE_KEY={REDACTED}"),
    ("private-key", "sign --private-key FAKEvalue123", f"sign --private-key {REDACTED}"),
    ("private key", "Private Key: FAKEvalue123", f"Private Key: {REDACTED}"),
    ("access_key", "S3_ACCESS_KEY=FAKEvalue123", f"S3_ACCESS_KEY={REDACTED}"),
    ("access-key", "s3 --access-key FAKEvalue123", f"s3 --access-key {REDACTED}"),
    ("accesskey", "ACCESSKEY=FAKEvalue123", f"ACCESSKEY={REDACTED}"),
    ("access key", "Access Key: FAKEvalue123", f"Access Key: {REDACTED}"),
    ("secret", "SIGNING_SECRET=FAKEvalue123", f"SIGNING_SECRET={REDACTED}"),
    ("token", "GH_TOKEN=FAKEvalue123", f"GH_TOKEN={REDACTED}"),
    ("password", "DB_PASSWORD=FAKEvalue123", f"DB_PASSWORD={REDACTED}"),
    ("passphrase", "KEY_PASSPHRASE=FAKEvalue123", f"KEY_PASSPHRASE={REDACTED}"),
    ("api_key", "OPENAI_API_KEY=FAKEvalue123", f"OPENAI_API_KEY={REDACTED}"),
    ("api-key", "x-api-key: FAKEvalue123", f"x-api-key: {REDACTED}"),
    ("api key", "API Key: FAKEvalue123", f"API Key: {REDACTED}"),
    ("privatekey", "privateKey: FAKEvalue123", f"privateKey: {REDACTED}"),
    ("credential", "credentials: FAKEvalue123", f"credentials: {REDACTED}"),
    ("auth", "NPM_AUTH=FAKEvalue123", f"NPM_AUTH={REDACTED}"),
]
"""(trigger word, a text whose key holds that word and no other, its redaction)."""


class TestEveryAssignWord:
    """Each trigger word of `redact_assignments` masks a key that holds no other one."""

    @pytest.mark.parametrize(
        ("word", "text", "expected"), ASSIGN_WORD_CASES, ids=[c[0] for c in ASSIGN_WORD_CASES]
    )
    def test_the_word_alone_triggers_the_rule(self, word: str, text: str, expected: str) -> None:
        """The key holds this trigger word and no other, and its value goes.

        Kills `_ASSIGN_WORDS` without this word (tests/mutation/wordlists.py): the rule then
        returns before looking, and `DB_PASSWD=...`, `MYSQL_PWD=...`, `APIKEY=...`,
        `--private-key ...` or `Access Key: ...` leaked.
        """
        others = [w for w in redact._ASSIGN_WORDS if w != word and w in text.lower()]
        assert word in text.lower()
        assert others == []
        assert redact_assignments(text) == expected
        assert REDACTOR(text) == expected


class TestNumbersUnderTokenKeys:
    """A number under a key that counts tokens is kept, unless the key names something stronger."""

    @pytest.mark.parametrize(
        ("word", "text"),
        [
            ("secret", "max_secret_tokens: 12345678"),
            ("pass", "max_passtoken: 12345678"),
            ("pwd", "pwd_token_limit: 12345678"),
            ("key", "key_token_count: 12345678"),
            ("credential", "credential_token_ttl: 12345678"),
            ("auth", "auth_token_budget: 12345678"),
        ],
    )
    def test_a_strong_word_makes_the_number_a_secret(self, word: str, text: str) -> None:
        """`max_secret_tokens: 12345678` is a code, not a count: it is masked.

        Kills `_STRONG_WORDS` without this word, and `and not any(... _STRONG_WORDS)` ->
        `and any(...)` / dropped (the number was then spared as a count).
        """
        key = text.split(":", 1)[0]
        assert [w for w in redact._STRONG_WORDS if w in key.lower()] == [word]
        assert REDACTOR(text) == f"{key}: {REDACTED}"

    @pytest.mark.parametrize(
        ("word", "text"),
        [
            ("tokens", "tokens: 4096"),
            ("max", "token_max: 4096"),
            ("min", "token_min: 1000"),
            ("num", "num_token: 1000"),
            ("count", "token_count: 1000"),
            ("limit", "token_limit: 8192"),
            ("budget", "token_budget: 9000"),
            ("len", "token_len: 2048"),
            ("size", "token_size: 1000"),
            ("ttl", "token_ttl: 3600"),
            ("expir", "token_expiry: 3600"),
            ("timeout", "token_timeout: 3000"),
        ],
    )
    def test_each_count_word_keeps_the_number(self, word: str, text: str) -> None:
        """`token_limit: 8192` is a count: kept as written (over-redaction pinned).

        Kills `_COUNT_WORDS` without this word (the number was then masked).
        """
        key = text.split(":", 1)[0]
        assert [w for w in redact._COUNT_WORDS if w in key.lower()] == [word]
        assert REDACTOR(text) == text
        assert REDACTOR(f"{key}: 12ab34cd") == f"{key}: {REDACTED}"  # not a number: a secret


TRIGGER_SAMPLES = {
    "private key": pem("RSA "),
    **{p: p.upper() + fill(16) for p in ("akia", "asia", "agpa", "aida", "aroa", "aipa")},
    **{p: p.upper() + fill(16) for p in ("anpa", "anva", "asca", "abia", "acca")},
    **{p: p + fill(36) for p in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")},
    "github_pat_": GITHUB_FINE_GRAINED,
    **{
        p: p + fill(24)
        for p in (
            *("glpat-", "gldt-", "glrt-", "glcbt-", "glptt-", "glft-", "glimt-", "glagent-"),
            *("gloas-", "glsoat-", "glffct-"),
        )
    },
    "gr1348941": "GR1348941" + fill(20, "FaKe_-9"),  # mixed case: kills A-Za-z -> A-ZA-Z
    "xox": SLACK_BOT,
    "xapp-": "xapp-1-A" + fill(10) + "-" + fill(13, "0") + "-" + fill(64, "fa4e"),
    "hooks.slack.com": SLACK_WEBHOOK,
    "_live_": STRIPE_SECRET,
    "_test_": "rk_test_" + fill(24),
    "whsec_": "whsec_" + fill(32),
    "sk-": OPENAI_KEY,
    "aiza": "AIza" + fill(35, "FAKE_fake-"),
    "npm_": "npm_" + fill(36),
    "sg.": "SG." + fill(22) + "." + fill(43, "fake"),
    "hf_": "hf_" + fill(34),
    "SK": "SK" + fill(32, "fa4e"),
    **{p: p + fill(32, "fa4e") for p in ("shpat_", "shpss_", "shpca_", "shppa_")},
    "pypi-age": "pypi-AgEIcHlwaS5vcmc" + fill(64, "FAKE_fake-"),
    **{p: p + fill(64, "fa4e") for p in ("dop_v1_", "doo_v1_", "dor_v1_")},
    "gocspx-": "GOCSPX-" + fill(28, "FAKE_fake-"),
    "age-secret-key-1": "AGE-SECRET-KEY-1" + fill(58, "FAKE"),
    "accountkey=": "AccountKey=" + AZURE_ACCOUNT_KEY,
    "sharedaccesskey=": "SharedAccessKey=" + AZURE_ACCOUNT_KEY,
    "sig=": "?sv=2022-11-02&sig=" + AZURE_SAS_SIGNATURE,
    "eyj": JWT,
    "cortex-lease-": "cortex-lease-" + fill(43, "FaKe_-9"),
}
"""For each trigger of each token shape, a made-up credential holding that trigger only."""


class TestEveryShapeTrigger:
    """Each trigger of each token shape, alone, gets its shape looked for."""

    def test_every_trigger_has_a_sample(self) -> None:
        """A new trigger needs a sample here, or a mutant dropping it would go unseen."""
        assert set(TRIGGER_SAMPLES) == {t for ts in redact._TOKEN_TRIGGERS for t in ts}

    @pytest.mark.parametrize("trigger", TRIGGER_SAMPLES)
    def test_the_trigger_alone_finds_its_shape(self, trigger: str) -> None:
        """The token-shape rule masks a credential holding this trigger and no other of its shape.

        Kills `_TOKEN_TRIGGERS` without this trigger (tests/mutation/wordlists.py): the shape
        was then never looked for, and e.g. an `AROA...` id or a `glsoat-` token leaked.
        """
        sample = TRIGGER_SAMPLES[trigger]
        (shape,) = [ts for ts in redact._TOKEN_TRIGGERS if trigger in ts]
        low = sample.lower()
        assert [t for t in shape if (t in low if t.islower() else t in sample)] == [trigger]
        out = redact_token_shapes(f"seen {sample} here")
        assert REDACTED in out
        secret = sample.split("=", 1)[1] if "=" in trigger else sample
        assert secret not in out


class TestEscapableLiterals:
    """A literal holding a character JSON escapes is found in every escaped part."""

    @pytest.mark.parametrize(
        "literal",
        ['pa"ss-fake-literal', "it's-fake-literal", "back\\slash-fake", "café-fake-literal",
         "tab\tfake-literal"],
        ids=["double_quote", "single_quote", "backslash", "non_ascii", "control"],
    )  # fmt: skip
    def test_a_literal_written_escaped_is_found_inside_a_json_string(self, literal: str) -> None:
        """`pa"ss-fake-literal`, written `pa\\"ss-fake-literal` in a JSON log, is still masked.

        Kills `_always` -> `return False` (parts were then never read, and a literal whose
        written form differs from it was kept), and each `or` -> `and`, each dropped `not`, in
        `Redactor.__init__`'s `_escapable_literals` (that kind of literal was then missed).
        """
        document = json.dumps({"msg": f"line one\nthe tenant is {literal} today"})
        out = Redactor([literal])(document)
        assert json.loads(out) == {"msg": f"line one\nthe tenant is {REDACTED} today"}
        assert Redactor([literal])(json.dumps("plain")) == json.dumps("plain")


class TestTriggerLines:
    """The lines looked at for assignments are exactly the lines holding a trigger word."""

    def test_a_text_that_starts_with_a_line_break(self) -> None:
        """A trigger on the second line of `\\nDB_PASSWORD=v` is found on its own line.

        Kills `low.rfind("\\n", 0, at)` -> `rfind("\\n", 1, at)` in `_trigger_lines` (the break
        at position 0 was not seen, the line looked at was empty, and the value was kept).
        """
        assert redact_assignments("\nDB_PASSWORD=FAKEvalue123") == f"\nDB_PASSWORD={REDACTED}"

    @pytest.mark.parametrize("escape", ["\\n", "\\r", "\\t"])
    def test_a_count_in_an_env_line_ends_at_an_escaped_break(self, escape: str) -> None:
        """`TOKEN_COUNT=4096\\tnext` in an escaped string keeps its count, as its reading does.

        Kills `_ESCAPED_BREAKS` without `\\r` or `\\t` (tests/mutation/wordlists.py): the word
        then ran on to `4096\\tnext`, no number, and was masked.
        """
        text = f"TOKEN_COUNT=4096{escape}next"
        assert REDACTOR(text) == text


class TestBareValueEdges:
    """Where a bare value stops being a secret: its length, a count's sign and decimal point."""

    def test_four_characters_are_a_secret_three_are_not(self) -> None:
        """The shortest value masked has four characters.

        Kills `len(stripped) < 4` -> `<= 4` and -> `< 5` (`password: abcd` was kept).
        """
        assert REDACTOR("password: abc") == "password: abc"
        assert REDACTOR("password: abcd") == f"password: {REDACTED}"

    def test_a_count_may_have_a_sign_and_one_decimal_point(self) -> None:
        """`-4096` and `4096.5` are counts; `1.2.3.4` and `X1234` are not numbers at all.

        Kills, in `numeric = stripped.lstrip("+-").replace(".", "", 1).isdigit()`: `lstrip(None)`
        and `rstrip("+-")` (a signed count was masked), `lstrip("XX+-XX")` (`X1234` was kept),
        `replace("XX.XX", ...)` and `replace(".", "XXXX", 1)` (a decimal count was masked),
        `replace(".", "")` and `replace(".", "", 2)` (`1.2.3.4` was kept as a count).
        """
        for count in ("-4096", "+4096", "4096.5"):
            assert REDACTOR(f"max_tokens: {count}") == f"max_tokens: {count}"
        for not_a_count in ("1.2.3.4", "X1234", "1.2.3"):
            assert REDACTOR(f"token_limit: {not_a_count}") == f"token_limit: {REDACTED}"

    def test_a_count_before_an_escaped_escape_is_still_a_count(self) -> None:
        """`max_tokens: 4096\\\\\\\\nnext` (a string in a string) keeps its count.

        Kills `value.rstrip("\\\\")` -> `rstrip(None)` and -> `lstrip("\\\\")` (the backslash
        left before the escaped break made `4096\\\\` no number, and it was masked).
        """
        text = "max_tokens: 4096\\\\nnext"
        assert REDACTOR(text) == text

    def test_only_backslashes_are_taken_off_a_value_end(self) -> None:
        """`password: abXXXXXX` is a secret: stripping `X`s too would leave `ab`, kept.

        Kills `value.rstrip("\\\\")` -> `rstrip("XX\\\\XX")`.
        """
        assert REDACTOR("password: abXXXXXX") == f"password: {REDACTED}"


def escaped_times(text: str, times: int) -> str:
    """`text` as a JSON string, `times` over."""
    for _ in range(times):
        text = json.dumps(text)
    return text


class TestEscapeLevels:
    """Text escaped inside escaped text is read level by level, four levels and no more."""

    def test_four_levels_are_read_and_no_more(self) -> None:
        """A secret behind four levels of escaping goes; behind five it is the documented limit.

        Kills, in `_through_escapes`: `levels > 1` -> `levels > 2` and `levels - 1` ->
        `levels - 2` (the fourth level was not read), `levels > 1` -> `levels >= 1`,
        `and` -> `or` and `levels - 1` -> `levels + 1` (a fifth level was read: the bound that
        keeps the reading's cost linear was gone).
        """
        line = "loaded\nDB_PASSWORD=FAKEdeep123456"
        for times in range(1, 5):
            out = REDACTOR(escaped_times(line, times))
            assert "FAKEdeep123456" not in out, times
            assert REDACTED in out
        deepest = escaped_times(line, 5)
        assert REDACTOR(deepest) == deepest


class TestAssignmentEdges:
    """Flags in capitals, and text whose lowercase is longer than itself."""

    def test_a_flag_in_capitals_is_a_flag(self) -> None:
        """`--API-KEY v` and `["--PASSWORD", "v"]` are masked like their lowercase forms.

        Kills dropping `flags` (re.IGNORECASE) from the `flag` and the `argv` patterns in
        `_build_assignment_patterns` (capital flags were left alone).
        """
        assert redact_assignments("deploy --API-KEY FAKEvalue123") == (
            f"deploy --API-KEY {REDACTED}"
        )
        assert redact_assignments('["--PASSWORD", "FAKEvalue123"]') == (
            f'["--PASSWORD", "{REDACTED}"]'
        )

    def test_a_json_value_may_start_like_the_end_of_a_string(self) -> None:
        """After a real JSON key, a quote always opens the value, even one followed by `,`,
        `}` or `:` (which, after a key quoted inside a string, could close that string).

        Kills `_build_assignment_patterns` 31 (the quoted key's value guard made the bare
        form's `not_at_string_end` for plain JSON keys too: a secret starting with a comma was
        left whole).
        """
        for start in (",", "}", ":", "]"):
            for sep in (":", ": "):
                document = f'{{"password"{sep}"{start}FAKEvalue123"}}'
                assert redact_assignments(document) == f'{{"password"{sep}"{REDACTED}"}}'

    def test_text_whose_lowercase_is_longer_is_looked_at_whole(self) -> None:
        """`İ` lowercases to two characters: line positions found in the lowercase would be off.

        Kills `len(low) != len(text)` -> `==` in `_trigger_lines` (the secret's line was cut
        at a shifted position and its value kept) and `[(0, len(text))]` -> `[(1, ...)]` (a key
        at the very start lost its first letter, and with it its trigger word).
        """
        text = "İ" * 30 + "\nDB_PASSWORD=FAKEvalue123 and more"
        assert redact_assignments(text) == "İ" * 30 + f"\nDB_PASSWORD={REDACTED} and more"
        assert redact_assignments("token=FAKEvalue123 İ") == f"token={REDACTED} İ"


class TestShapeDetails:
    """Details of shapes and tags that no sample exercised."""

    def test_a_self_closing_tag_may_end_in_a_space(self) -> None:
        """`<private/ >` removes nothing, like `<private/>`.

        Kills `match.group(2).rstrip()` -> `.lstrip()` in `strip_private` (the tag was then an
        opening one and removed the rest of the text).
        """
        assert strip_private("a <private/ > b") == "a  b"

    def test_a_shopify_token_may_be_written_in_capitals(self) -> None:
        """Its hex body is matched in either case.

        Kills `[a-fA-F0-9]` -> `[a-fa-f0-9]` in the Shopify shape.
        """
        token = "shpat_" + fill(32, "FA4E")
        assert redact_token_shapes(f"({token})") == f"({REDACTED})"

    def test_an_azure_key_name_in_any_case(self) -> None:
        """`accountkey=` (as some tools print it) is an account key too.

        Kills `re.compile(regex, flags)` -> `re.compile(regex)` in `_build_token_pattern`: the
        Azure shape's case-insensitivity was then lost.
        """
        out = redact_token_shapes(f"accountkey={AZURE_ACCOUNT_KEY};endpointsuffix=x")
        assert out == f"accountkey={REDACTED};endpointsuffix=x"


class TestReadingTriggers:
    """The escaped reading looks for `<private>` too: an unclosed span ends with its string."""

    def test_an_unclosed_span_in_a_json_string_stops_at_the_string(self) -> None:
        """Read as a string's value, an unclosed span removes the rest of that string only.

        Kills `_ALL_TRIGGERS` without "private" (tests/mutation/wordlists.py): the string was
        then not read, and the span removed the rest of the document, which was no longer JSON.
        """
        document = json.dumps({"a": "x <private>FAKEhidden\nmore", "b": 1})
        assert json.loads(REDACTOR(document)) == {"a": f"x {PRIVATE}", "b": 1}

    @pytest.mark.parametrize(
        ("text", "secret"),
        [
            ("cfg \\u0070assword=FAKEvalue123", "FAKEvalue123"),
            ("cfg \\x70assword=FAKEvalue123", "FAKEvalue123"),
            ("cfg \\U00000070assword=FAKEvalue123", "FAKEvalue123"),
            ("dsn https:\\/\\/app:FAKEpw12345@db.example.invalid", "FAKEpw12345"),
            ("cfg pass\\\nword=FAKEvalue123", "FAKEvalue123"),
            ("cfg pass\\\r\nword=FAKEvalue123", "FAKEvalue123"),
            ("sent Bearer\\tFAKEbear0123456789xyz", "FAKEbear0123456789xyz"),
        ],
        ids=["u", "x", "U", "slash", "continuation", "crlf_continuation", "bearer"],
    )
    def test_an_escape_may_hide_the_trigger_itself(self, text: str, secret: str) -> None:
        """`\\\\u0070assword=v` holds no trigger as written: the escape makes it worth reading.

        Kills `_HIDING_ESCAPES` without `\\\\u`, `\\\\x`, `\\\\U`, `\\\\/` or a continuation, and
        `_ALL_TRIGGERS` without "bearer" (tests/mutation/wordlists.py): the part was then not
        read, and the rules, seeing no trigger in its written form, kept the secret.
        """
        assert secret not in REDACTOR(text)
        assert secret not in REDACTOR(json.dumps({"log": text}))


@pytest.mark.parametrize(
    "text",
    [
        # A record id is Crockford base32: about one id in 2,000 holds `PWD`, a secret-naming
        # word. Before this test such a case could never be shared: its commit message
        # (`cortex case ID: replica ...`) read as `key: value` and the share was refused.
        "cortex case task_01M94ZPPMQ3JM90GJCPWDTHVM9: replica rep_01M94ZPPMQ3JM90GJCPWDTHVMA at 3",
        "ev_01M94ZPPMQ3JM90GJCPWDTHVMA: the callback drops return_to",
        "see task_01M94ZPPMQ3JM90GJCPWDTHVM9=done",
        '{"task_01M94ZPPMQ3JM90GJCPWDTHVM9": "a goal of many words"}',
    ],
)
def test_a_record_id_is_not_a_secret_name(text: str) -> None:
    assert Redactor()(text) == text


def test_a_secret_name_that_only_looks_like_an_id_is_still_masked() -> None:
    """Only a whole record id is spared: a key with more around it is still a key."""
    masked = Redactor()("MY_task_01M94ZPPMQ3JM90GJCPWDTHVM9: hunter2hunter2")
    assert "hunter2hunter2" not in masked
    assert Redactor()("DB_PWD: hunter2hunter2") == "DB_PWD: [REDACTED]"


# Credentials a command line passes in a tool's own syntax: the password goes, the rest stays.
_CLI_PASSWORD = "FAKEpw" + "0" * 10


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("curl -u fake-user:{pw} https://x.invalid", "curl -u fake-user:{r} https://x.invalid"),
        ("curl -su fake-user:{pw} https://x.invalid", "curl -su fake-user:{r} https://x.invalid"),
        ("curl --user fake-user:{pw} x.invalid", "curl --user fake-user:{r} x.invalid"),
        ("curl --user=fake-user:{pw} x.invalid", "curl --user=fake-user:{r} x.invalid"),
        ("curl -ufake-user:{pw} x.invalid", "curl -ufake-user:{r} x.invalid"),
        ("wget --user u --password {pw} x.invalid", "wget --user u --password {r} x.invalid"),
        ("mysql -u root -p{pw} app", "mysql -u root -p{r} app"),
        ("mysqldump -uroot -p{pw} app > dump.sql", "mysqldump -uroot -p{r} app > dump.sql"),
        ("mariadb -h db -p'{pw}' app", "mariadb -h db -p{r} app"),
        ("mysql --password={pw} app", "mysql --password={r} app"),
        ("sshpass -p {pw} ssh deploy@host.invalid", "sshpass -p {r} ssh deploy@host.invalid"),
        ("sshpass -p{pw} scp a host.invalid:", "sshpass -p{r} scp a host.invalid:"),
        ("sshpass -e -p {pw} ssh h", "sshpass -e -p {r} ssh h"),
        (
            "cd app && curl -fsS -u ci:{pw} x.invalid | jq .",
            "cd app && curl -fsS -u ci:{r} x.invalid | jq .",
        ),
    ],
)
def test_command_line_credentials_are_masked(command: str, expected: str) -> None:
    command = command.format(pw=_CLI_PASSWORD)
    assert Redactor()(command) == expected.format(r=REDACTED)
    # The escaped form (a JSON log of the command) is masked too.
    assert _CLI_PASSWORD not in Redactor()(json.dumps({"command": command}))


@pytest.mark.parametrize(
    "command",
    [
        "curl -u fake-user https://x.invalid",  # no password: curl asks for it
        "docker run -u 1000:1000 img",  # a user and group, not a password
        "git add -u && mkdir -p build/out",
        "ssh -p 2222 deploy@host.invalid",
        "mysql -u root -p app",  # a separate word after -p is the database: mysql prompts
        "grep -p pattern file",
        "curl -sS https://x.invalid/users -o users.json",
    ],
)
def test_command_lines_without_credentials_are_kept(command: str) -> None:
    assert Redactor()(command) == command


# Attack on step 5 (issue 27): a password is one shell word, whatever its quoting.
@pytest.mark.parametrize(
    ("command", "expected"),
    [
        # A quote after the `:` was not a password character: all of it was kept.
        ('curl -u admin:"{pw}" x.invalid', "curl -u admin:{r} x.invalid"),
        ("curl -u admin:'{pw} two' x.invalid", "curl -u admin:{r} x.invalid"),
        ("curl -u '':{pw} x.invalid", "curl -u '':{r} x.invalid"),
        # A space, `|`, `;` or `&` inside the quotes is the password's: only its start was masked.
        ("curl -u 'admin:a {pw}' x.invalid", "curl -u 'admin:{r}' x.invalid"),
        ('curl -u "admin:a {pw}" x.invalid', 'curl -u "admin:{r}" x.invalid'),
        ("curl -u 'admin:a|{pw}' x.invalid; echo ok", "curl -u 'admin:{r}' x.invalid; echo ok"),
        ("curl --user 'admin:a;{pw}' x.invalid", "curl --user 'admin:{r}' x.invalid"),
        ("curl -u 'admin:a&&{pw}' x.invalid", "curl -u 'admin:{r}' x.invalid"),
        # Quoted and bare parts joined make one word.
        ("curl -u admin:'a'{pw} x.invalid", "curl -u admin:{r} x.invalid"),
        ("curl -u \"admin:a\"'{pw}' x.invalid", 'curl -u "admin:{r}" x.invalid'),
        ("sshpass -p 'a'\"{pw}\" ssh h", "sshpass -p {r} ssh h"),
        ("mysql -p'a'\"{pw}\" app", "mysql -p{r} app"),
        # The shell's own reading is kept: an unquoted `|` ends the command.
        ("curl -u admin:{pw}|tee log", "curl -u admin:{r}|tee log"),
        ("bash -c 'curl -u admin:{pw} x.invalid'", "bash -c 'curl -u admin:{r} x.invalid'"),
    ],
)
def test_a_command_line_password_is_masked_whatever_its_quoting(
    command: str, expected: str
) -> None:
    command = command.format(pw=_CLI_PASSWORD)
    masked = Redactor()(command)
    assert masked == expected.format(r=REDACTED)
    assert Redactor()(masked) == masked


@pytest.mark.parametrize(
    "command",
    [
        "curl -u 'fake-user:' https://x.invalid",  # an empty password
        "curl -d 'a|b' x.invalid | docker run -u 1000:1000 img",
        'curl -H "X: a | docker run -u 1000:1000 img',  # an unclosed quote is one character
        "curl -sS -o 'out file.json' https://x.invalid:8443/a",
    ],
)
def test_quoting_in_command_lines_without_credentials_is_kept(command: str) -> None:
    assert Redactor()(command) == command


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        # A case-insensitive disk (macOS, Windows) runs `CURL` or `curl.EXE` as curl.
        ("CURL -u admin:{pw} x.invalid", "CURL -u admin:{r} x.invalid"),
        ("Curl.EXE --user admin:{pw} x.invalid", "Curl.EXE --user admin:{r} x.invalid"),
        ("MySQL -uroot -p{pw} app", "MySQL -uroot -p{r} app"),
        ("SSHPASS -p {pw} ssh h", "SSHPASS -p {r} ssh h"),
        # The proxy's credentials take the same USER:PASSWORD.
        ("curl -U proxy:{pw} x.invalid", "curl -U proxy:{r} x.invalid"),
        ("curl -sU proxy:{pw} x.invalid", "curl -sU proxy:{r} x.invalid"),
        ("curl --proxy-user proxy:{pw} x.invalid", "curl --proxy-user proxy:{r} x.invalid"),
        ("curl --proxy-user=proxy:{pw} x.invalid", "curl --proxy-user=proxy:{r} x.invalid"),
    ],
)
def test_command_line_passwords_in_any_case_and_for_the_proxy_are_masked(
    command: str, expected: str
) -> None:
    masked = Redactor()(command.format(pw=_CLI_PASSWORD))
    assert masked == expected.format(r=REDACTED)


def test_a_proxy_user_without_a_password_is_kept() -> None:
    for command in ("curl -U proxy x.invalid", "curl -sU proxy x.invalid", "CURL -X GET x"):
        assert Redactor()(command) == command


@pytest.mark.parametrize(
    "command",
    [
        # The value of an option that takes one, attached: not a user, whatever its letters.
        "curl -duser:1 https://x.invalid",
        "curl -dUser:1 https://x.invalid",
        "curl -Hx-user:1 https://x.invalid",
        "curl -ouser:out.json https://x.invalid",
        "curl -XPUT -Tuser:file https://x.invalid",
    ],
)
def test_an_attached_value_that_begins_with_u_is_not_a_curl_user(command: str) -> None:
    assert Redactor()(command) == command


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        # sshpass's options end at the command it runs: what follows is that command's.
        ("sshpass -p {pw} ssh -p 2222 deploy@h", "sshpass -p {r} ssh -p 2222 deploy@h"),
        ("sshpass -p{pw} scp -P 22 -p a h:", "sshpass -p{r} scp -P 22 -p a h:"),
        ("sshpass -v -P 'Pass:' -p {pw} ssh h", "sshpass -v -P 'Pass:' -p {r} ssh h"),
        ("sshpass -f pw.txt ssh -p 2222 h", "sshpass -f pw.txt ssh -p 2222 h"),
        ('sshpass -e rsync -e "ssh -p 2222" a h:', 'sshpass -e rsync -e "ssh -p 2222" a h:'),
        # A quote after the password closes the string the command sits in: it is kept.
        ('bash -c "curl -u a:{pw}" && echo ok', 'bash -c "curl -u a:{r}" && echo ok'),
        ("ssh h 'mysql -uroot -p{pw}' && echo ok", "ssh h 'mysql -uroot -p{r}' && echo ok"),
    ],
)
def test_sshpass_options_and_an_outer_quote_are_read_as_the_shell_reads_them(
    command: str, expected: str
) -> None:
    masked = Redactor()(command.format(pw=_CLI_PASSWORD))
    assert masked == expected.format(r=REDACTED)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            "curl -u 'deploy:a curl {pw}' https://x.invalid",
            "curl -u 'deploy:{r}' https://x.invalid",
        ),
        ('curl -u "deploy:x mysql -p{pw}" h', 'curl -u "deploy:{r}" h'),
        ("mysql -p'a sshpass {pw}' db && echo ok", "mysql -p{r} db && echo ok"),
        ("sshpass -p 'a curl {pw}' ssh h", "sshpass -p {r} ssh h"),
        # Never closed: the password runs to the line's end.
        ("curl -u 'deploy:a curl {pw}\nnext", "curl -u 'deploy:{r}'\nnext"),
        # After the quote, the next command is read as before.
        ("curl -u 'u:a curl b'; curl -u v:{pw} h", "curl -u 'u:{r}'; curl -u v:{r} h"),
        # A tool inside a quote that is not a password is a command of its own.
        ('sshpass -p {pw} ssh h "mysql -p{pw}"', 'sshpass -p {r} ssh h "mysql -p{r}"'),
    ],
)
def test_a_password_holding_a_tool_name_is_masked_whole(command: str, expected: str) -> None:
    """A tool's name inside a quoted password cut the command there, and the rest of the
    password was read as the next command's words and kept."""
    masked = Redactor()(command.format(pw=_CLI_PASSWORD))
    assert masked == expected.format(r=REDACTED)


@pytest.mark.parametrize(
    "argv",
    [
        ["curl", "-u", "deploy:{pw}", "https://x.invalid"],
        ["curl", "-fsSu", "deploy:{pw}", "https://x.invalid"],
        ["curl", "--user", "deploy:{pw}"],
        ["sshpass", "-p", "{pw}", "ssh", "-p", "2222", "h"],
        ["sshpass", "-v", "-P", "Pass:", "-p", "{pw}", "ssh", "h"],
    ],
)
def test_a_command_line_written_as_a_list_keeps_no_password(argv: list[str]) -> None:
    """An argv list (a verifier's argv, a JSON log, CalledProcessError's message) is one form."""
    argv = [arg.format(pw=_CLI_PASSWORD) for arg in argv]
    for written in (
        str(argv),
        json.dumps(argv),
        f"Command '{argv}' returned non-zero exit status 1",
    ):
        masked = Redactor()(written)
        assert _CLI_PASSWORD not in masked, written
        assert masked == written.replace(_CLI_PASSWORD, REDACTED)


def test_an_argv_list_without_a_password_is_kept() -> None:
    for argv in (["curl", "-u", "deploy", "x"], ["sshpass", "-f", "pw.txt", "ssh", "-p", "22"]):
        for written in (str(argv), json.dumps(argv)):
            assert Redactor()(written) == written


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        # `sshpass -e` reads the password from the environment variable named SSHPASS.
        ("SSHPASS={pw} sshpass -e ssh h", "SSHPASS={r} sshpass -e ssh h"),
        ("export SSHPASS='a {pw}'; sshpass -e scp a h:", "export SSHPASS={r}; sshpass -e scp a h:"),
        ("env SSHPASS={pw} sshpass -e ssh h", "env SSHPASS={r} sshpass -e ssh h"),
        # Not the variable: a version pin, another variable.
        ("apt-get install -y sshpass=1.09-1", "apt-get install -y sshpass=1.09-1"),
        ("MY_SSHPASS=x sshpass -f f ssh h", "MY_SSHPASS=x sshpass -f f ssh h"),
    ],
)
def test_the_sshpass_variable_is_masked(command: str, expected: str) -> None:
    masked = Redactor()(command.format(pw=_CLI_PASSWORD))
    assert masked == expected.format(r=REDACTED)
