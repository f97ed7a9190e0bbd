"""Key normalisation: one name, however it is cased or separated, and abbreviations."""

from __future__ import annotations

import pytest

from minds.domain.masking import is_identity_key, is_secret_key, key_words


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
