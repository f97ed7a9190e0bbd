"""Key normalisation: one name, however it is cased or separated, and abbreviations."""

from __future__ import annotations

import pytest

from minds.domain.masking import is_identity_key, is_secret_key, key_words
from minds.domain.masking.keys import is_reference_key, reference_hides_secret


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("dbPassword", ("db", "password")),
        ("DB_PASSWORD", ("db", "password")),
        ("db-password", ("db", "password")),
        ("db.password", ("db", "password")),
        ("APIKey", ("api", "key")),
        ("x-api-key", ("x", "api", "key")),
        ("tls.key", ("tls", "key")),
        ("OAuth2Token", ("o", "auth", "2", "token")),
    ],
)
def test_names_split_into_lower_case_words(name: str, words: tuple[str, ...]) -> None:
    assert key_words(name) == words


@pytest.mark.parametrize(
    "name",
    [
        "password",
        "dbPass",
        "DB_PASS",
        "pwd",
        "passwd",
        "PGPASSWORD",
        "MYSQL_ROOT_PASSWORD",
        "auth",
        "basic-auth",
        "token",
        "githubToken",
        "access_token",
        "apikey",
        "api_key",
        "X-API-KEY",
        "secret",
        "clientSecret",
        "credential",
        "credentials",
        "creds",
        "private_key",
        "privateKey",
        "tls.key",
        "sshKey",
        "signing_key",
        "aws_secret_access_key",
        "Authorization",
        "Set-Cookie",
        "session_id",
        "sig",
        "dsn",
        "client-key-data",
        ".dockerconfigjson",
        "auth_key",
        "service_key",
        "db_key",
        "priv_key",
        "aws_key",
        "DD_APP_KEY",
        "ibm_cloud_iam_key",
        "ADAFRUIT_IO_KEY",
        "ALGOLIA_ADMIN_KEY",
        "TWITTER_CONSUMER_KEY",
        "sonar.login",
        "_gitlab_session",
        "BUNDLE_GEMS__EXAMPLE__COM",
        "contraseña",
        "Passwort",
    ],
)
def test_secret_names(name: str) -> None:
    assert is_secret_key(name)


@pytest.mark.parametrize(
    "name",
    [
        "passwordPolicy",
        "password_file",
        "secretRef",
        "secretName",
        "tokenUrl",
        "maxTokens",
        "tokensUsed",
        "publicKey",
        "sshKeyName",
        "key",
        "name",
        "bypass",
        "compass",
        "oauth",
        "author",
        "authEnabled",
        "imagePullSecrets",
        "client-certificate-data",
        "",
        "ALGOLIA_PUBLIC_KEY",
        "RECAPTCHA_SITE_KEY",
        "ALGOLIA_APP_ID",
        "session",
        "tmux_session",
        "BUNDLE_PATH",
        "sonar.host.url",
    ],
)
def test_names_about_secrets_are_not_secret(name: str) -> None:
    assert not is_secret_key(name)


@pytest.mark.parametrize("name", ["decidedBy", "grantedBy", "by", "approvers", "actor"])
def test_identity_keys(name: str) -> None:
    assert is_identity_key(name)


@pytest.mark.parametrize("name", ["user", "email", "owner", "bypass"])
def test_other_keys_are_not_identities(name: str) -> None:
    assert not is_identity_key(name)


@pytest.mark.parametrize("name", ["secretRef", "secretKeyRef", "secretName", "tokenSecretRef"])
def test_references_to_secrets(name: str) -> None:
    assert is_reference_key(name)


@pytest.mark.parametrize("name", ["configMapRef", "secret", "valueFrom", "imagePullSecrets", "ref"])
def test_other_names_are_no_references(name: str) -> None:
    assert not is_reference_key(name)


@pytest.mark.parametrize(
    ("field", "value", "hides"),
    [
        (None, "db-credentials", False),
        (None, "tls.atlas-2024", False),
        (None, "Pa55w0rd!2024", True),  # no Kubernetes name
        (None, "7c4a8d09ca3762af61e59520943dc264", True),  # reads as generated
        ("name", "db", False),
        ("name", "Sup3r$ecret", True),
        ("namespace", "ops", False),
        ("key", "DB_PASSWORD", False),
        ("key", "tls.crt", False),
        ("key", "S3cr3t!", True),
        ("key", "tok-8f7e6d5c4b3a2910", True),
        ("key", "S3cr3tValue9", True),  # mixed case, digits, 10 or more
        ("optional", "true", False),
        ("value", "hunter2", True),  # a reference holds no value
    ],
)
def test_what_a_reference_to_a_secret_may_hold(field: str | None, value: str, hides: bool) -> None:
    assert reference_hides_secret(field, value) is hides
