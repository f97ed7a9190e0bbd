"""Which names (payload keys, `key=value` keys, env variable names) hold a secret.

A name is split into lower-case words at separators and case changes, so `dbPass`, `DB_PASS`,
`db-pass` and `db.pass` are the same two words. It names a secret when

- its letters, run together, end with a secret noun (`PGPASSWORD`, `githubToken`, `x-api-key`);
- or its last word is a short secret word that is only safe to match whole (`pwd`, `pass`,
  `auth`: `bypass` and `oauth` are not secrets, `db_pass` and `basic-auth` are);
- or its last two words name a key that is secret (`tls.key`, `signingKey`; not `publicKey`).

The last word decides because it is the noun: `passwordPolicy`, `secretRef`, `tokenUrl` and
`maxTokens` name something about a secret, not the secret itself.
"""

from __future__ import annotations

import re
from typing import Final

_WORDS: Final = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")

_SECRET_ENDINGS: Final = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "privatekey",
    "accesskey",
    "secretkey",
    "authorization",
    "credential",
    "credentials",
    "cookie",
    "sessionid",
    "signature",
    "keydata",  # a kubeconfig's client-key-data
    "dockerconfigjson",  # a pull Secret's registry credentials
    "dockercfg",
)
_SECRET_WORDS: Final = frozenset(
    {"pass", "pwd", "pw", "auth", "cred", "creds", "psk", "sig", "otp", "totp", "pin", "dsn"}
)
_SECRET_KEY_OWNERS: Final = frozenset(
    {
        "tls",
        "ssh",
        "signing",
        "encryption",
        "master",
        "client",
        "account",
        "storage",
        "shared",
        "session",
        "webhook",
        "license",
        "hmac",
    }
)
# Authenticated identities the ledger must keep to say who decided: `decidedBy`, `grantedBy`.
_IDENTITY_WORDS: Final = frozenset({"by", "actor", "approver", "approvers"})


def key_words(name: str) -> tuple[str, ...]:
    """The lower-case words of a name: `dbPassword` and `DB_PASSWORD` are (`db`, `password`)."""
    return tuple(word.lower() for word in _WORDS.findall(name))


def is_secret_key(name: str) -> bool:
    """Whether a key or variable name names a value that must not be shown or stored."""
    words = key_words(name)
    if not words:
        return False
    if "".join(words).endswith(_SECRET_ENDINGS) or words[-1] in _SECRET_WORDS:
        return True
    return len(words) >= 2 and words[-1] == "key" and words[-2] in _SECRET_KEY_OWNERS


def is_identity_key(name: str) -> bool:
    """Whether a key holds the authenticated identity of whoever decided (kept for audit)."""
    words = key_words(name)
    return bool(words) and words[-1] in _IDENTITY_WORDS
