"""Which names (payload keys, `key=value` keys, env variable names) hold a secret.

A name is split into lower-case words at separators and case changes, so `dbPass`, `DB_PASS`,
`db-pass` and `db.pass` are the same two words. It names a secret when

- its letters, run together, end with a secret noun (`PGPASSWORD`, `githubToken`, `x-api-key`);
- or its last word is a short secret word that is only safe to match whole (`pwd`, `pass`,
  `auth`: `bypass` and `oauth` are not secrets, `db_pass` and `basic-auth` are);
- or its last two words name a key that is secret (`tls.key`, `signingKey`; not `publicKey`);
- or it ends in `key` and names a service whose keys are credentials (`ADAFRUIT_IO_KEY`,
  `ALGOLIA_ADMIN_KEY`; not `ALGOLIA_PUBLIC_KEY`);
- or it is a session cookie (`_gitlab_session`) or Bundler's credentials for a gem host
  (`BUNDLE_GEMS__EXAMPLE__COM`).

Names in other scripts are folded to ASCII first, so `contraseña` is `contrasena`.

The last word decides because it is the noun: `passwordPolicy`, `secretRef`, `tokenUrl` and
`maxTokens` name something about a secret, not the secret itself.
"""

from __future__ import annotations

import re
import unicodedata
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
    "sonarlogin",  # SonarScanner's `sonar.login` is a token
    "contrasena",
    "passwort",
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
        "auth",
        "service",
        "db",
        "database",
        "priv",
        "iam",
        "aws",
        "app",
        "application",
    }
)
# Services whose `..._KEY` is a credential (the vendors of the rule sets' keyed rules).
_KEYED_SERVICES: Final = frozenset(
    {
        "adafruit", "adobe", "airtable", "algolia", "alibaba", "asana", "atlassian", "beamer",
        "bitbucket", "bittrex", "cloudant", "cloudflare", "codecov", "cohere", "coinbase",
        "confluence", "confluent", "contentful", "datadog", "discord", "droneci", "dropbox",
        "etsy", "facebook", "fastly", "finicity", "finnhub", "flickr", "freshbooks", "gitter",
        "gocardless", "heroku", "hubspot", "ibm", "intercom", "jfrog", "jira", "kraken", "kucoin",
        "launchdarkly", "linear", "linkedin", "lob", "looker", "mailchimp", "mailgun", "mapbox",
        "mattermost", "meraki", "messagebird", "netlify", "newrelic", "nytimes", "okta", "plaid",
        "rapidapi", "sendbird", "sendgrid", "sentry", "snyk", "softlayer", "sonar", "squarespace",
        "stripe", "sumo", "sumologic", "telegram", "travis", "twilio", "twitch", "twitter",
        "typeform", "yandex", "zendesk",
    }
)  # fmt: skip
_PUBLIC_WORDS: Final = frozenset({"public", "pub", "publishable", "site", "id"})
# Bundler reads a gem host's `user:password` from BUNDLE_<HOST>, dots written as `__`.
_BUNDLER_HOST: Final = re.compile(r"BUNDLE_[A-Z0-9_-]*[A-Z0-9]__[A-Z0-9][A-Z0-9_-]*")
# Authenticated identities the ledger must keep to say who decided: `decidedBy`, `grantedBy`.
_IDENTITY_WORDS: Final = frozenset({"by", "actor", "approver", "approvers"})


def key_words(name: str) -> tuple[str, ...]:
    """The lower-case words of a name: `dbPassword` and `DB_PASSWORD` are (`db`, `password`)."""
    if not name.isascii():
        name = "".join(c for c in unicodedata.normalize("NFKD", name) if c.isascii())
    return tuple(word.lower() for word in _WORDS.findall(name))


def is_secret_key(name: str) -> bool:
    """Whether a key or variable name names a value that must not be shown or stored."""
    words = key_words(name)
    if not words:
        return False
    if "".join(words).endswith(_SECRET_ENDINGS) or words[-1] in _SECRET_WORDS:
        return True
    if words[-1] == "session":
        return name.startswith("_")  # a session cookie: `_gitlab_session`, `_app_session`
    if len(words) >= 2 and words[-1] == "key" and words[-2] not in _PUBLIC_WORDS:
        return words[-2] in _SECRET_KEY_OWNERS or not _KEYED_SERVICES.isdisjoint(words)
    return _BUNDLER_HOST.fullmatch(name) is not None


def is_identity_key(name: str) -> bool:
    """Whether a key holds the authenticated identity of whoever decided (kept for audit)."""
    words = key_words(name)
    return bool(words) and words[-1] in _IDENTITY_WORDS


# A reference to a Secret (`secretRef`, `secretKeyRef`, `secretName`, `tokenSecretRef`) holds
# names, never the secret: a Secret's name (DNS-1123), a key of its data, `optional`. A value
# there that is no such name is a secret written where its name belongs.
_REFERENCE_ENDINGS: Final = frozenset({"ref", "name"})
_OBJECT_NAME: Final = re.compile(r"[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?")
_DATA_KEY: Final = re.compile(r"[-._a-zA-Z0-9]{1,253}")
_REFERENCE_FIELDS: Final = {"name": _OBJECT_NAME, "namespace": _OBJECT_NAME, "key": _DATA_KEY}


def is_reference_key(name: str) -> bool:
    """Whether a key names a Secret (`secretRef`, `secretKeyRef`) rather than holding one."""
    words = key_words(name)
    return len(words) >= 2 and words[-1] in _REFERENCE_ENDINGS and "secret" in words[:-1]


def reference_hides_secret(field: str | None, value: str) -> bool:
    """Whether `value`, under `field` of a reference to a Secret (None: the reference itself,
    as in `secretRef: db-creds`), is a secret rather than a name.

    Under the reference, `name` and `namespace` anything but a Kubernetes name is; under `key`
    anything but a data key; `optional` is never; any other field always is. A name whose part
    (between `-`, `.` and `_`) reads as generated, letters and digits 16 or more, or 10 or more
    in mixed case, is a credential too: Secrets are named by people.
    """
    if field == "optional":
        return False
    pattern = _OBJECT_NAME if field is None else _REFERENCE_FIELDS.get(field)
    if pattern is None:
        return True
    return pattern.fullmatch(value) is None or any(map(_looks_generated, _PARTS.split(value)))


_PARTS: Final = re.compile(r"[-._]")


def _looks_generated(part: str) -> bool:
    if not (part.isascii() and part.isalnum()) or part.isalpha() or part.isdigit():
        return False
    mixed_case = not (part.islower() or part.isupper())
    return len(part) >= 16 or (mixed_case and len(part) >= 10)
