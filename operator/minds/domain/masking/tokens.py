"""Credentials that announce their issuer by their shape: a prefix, and a fixed alphabet and
length after it (`ghp_…`, `xoxb-…`, `dop_v1_…`, `SG.….…`).

Each entry is written from the issuer's published format, not from any scanner's rules. A
prefix this specific is no guess: nothing else in a log starts that way, so these tokens are
masked wherever they appear, with or without a key in front of them. Tokens that carry no
prefix (a bare 40-character hex string) are left to the keyed rules: masking every hex word
would mask every digest and commit id. `tests/unit/masking/rulesets.yaml` holds an example of
each entry, and the test fails when an entry is dropped.
"""

from __future__ import annotations

from typing import Final

# Issuer: pattern (a regular expression without groups). Lengths are minimums where the
# issuer's tokens have grown over time, so that a longer token is masked whole.
ISSUER_TOKENS: Final[tuple[tuple[str, str], ...]] = (
    ("GitHub", r"gh[pousr]_[A-Za-z0-9_]{30,}|github_pat_[A-Za-z0-9_]{40,}"),
    (
        "GitLab",
        r"gl(?:pat|dt|ft|imt|ptt|rt|soat|agent|oas|cbt|ffct)-[\w-]{20,}(?:\.[0-9a-z]{9})?"
        r"|GR1348941[\w-]{20,}",
    ),
    ("Slack", r"xox[abposre]-[A-Za-z0-9-]{10,}|xoxe\.xox[bp]-[\w-]{10,}|xapp-[\w-]{10,}"),
    ("OpenAI, Anthropic", r"sk-(?:proj-|live_|test_)?[A-Za-z0-9_-]{20,}"),
    ("Stripe", r"(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,}"),
    ("npm", r"npm_[A-Za-z0-9]{36,}"),
    ("Hugging Face", r"hf_[A-Za-z0-9]{30,}|api_org_[A-Za-z]{30,}"),
    ("PyPI", r"pypi-AgE[\w-]{50,}"),
    ("RubyGems", r"rubygems_[a-f0-9]{48,}"),
    ("Clojars", r"CLOJARS_[A-Za-z0-9]{60,}"),
    ("Artifactory", r"AKCp[A-Za-z0-9]{60,}|cmVmd[A-Za-z0-9]{59}(?![\w+/=])"),
    (
        "1Password",
        r"ops_eyJ[A-Za-z0-9+/]{100,}={0,3}"
        r"|A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}",
    ),
    ("Adobe", r"p8e-[A-Za-z0-9]{32,}"),
    ("age", r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    ("Airtable", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    ("Atlassian", r"ATATT3[\w=-]{100,}"),
    (
        "Authress",
        r"(?:sc|ext|scauth|authress)_[A-Za-z0-9]{5,30}\.[A-Za-z0-9]{4,6}\.acc[_-][\w-]{10,32}"
        r"\.[\w+/=-]{30,}",
    ),
    ("Amazon Bedrock", r"ABSK[A-Za-z0-9+/]{100,}={0,2}|bedrock-api-key-[A-Za-z0-9+/=]{40,}"),
    ("Azure AD", r"[\w~.]{3}\dQ~[\w~.-]{31,34}"),
    ("ClickHouse", r"4b1d(?=[a-z0-9]*[A-Z])[A-Za-z0-9]{38}"),
    ("Cloudflare", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}"),
    ("Databricks", r"dapi[a-f0-9]{32}(?:-\d)?"),
    ("Defined Networking", r"dnkey-[\w=-]{26}-[\w=-]{52}"),
    ("DigitalOcean", r"do[opr]_v1_[a-f0-9]{64}"),
    ("Doppler", r"dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,}"),
    ("Dropbox", r"sl\.[\w=-]{130,}"),
    ("Duffel", r"duffel_(?:test|live)_[\w=-]{43,}"),
    ("Dynatrace", r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    ("EasyPost", r"EZ[AT]K[A-Za-z0-9]{54}"),
    ("Facebook", r"EAA[MC][A-Za-z0-9]{100,}|\d{15,16}(?:\||%7C)[\w-]{27,40}"),
    ("Flutterwave", r"FLWSECK(?:_TEST)?-[a-hA-H0-9]{12,32}(?:-X)?"),
    ("Fly.io", r"fo1_[\w-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3}"),
    ("Frame.io", r"fio-u-[\w=-]{64}"),
    (
        "Grafana",
        r"eyJrIjoi[A-Za-z0-9]{70,}={0,3}|glc_[A-Za-z0-9+/]{32,}={0,3}"
        r"|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}",
    ),
    ("Harness", r"(?:pat|sat)\.[\w-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}"),
    ("HashiCorp", r"[a-z0-9]{14}\.atlasv1\.[\w=-]{60,}|hv[sbr]\.[\w-]{90,}"),
    ("Heroku", r"HRKU-AA[\w-]{58}"),
    ("Infracost", r"ico-[A-Za-z0-9]{32}"),
    ("42 Intra", r"s-s4t2(?:ud|af)-[a-f0-9]{64}"),
    ("Linear", r"lin_api_[A-Za-z0-9]{40}"),
    ("Mailchimp", r"[0-9a-f]{32}-us\d{1,2}\b"),
    ("MaxMind", r"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk"),
    ("New Relic", r"NRAK-[A-Z0-9]{27}|NRII-[\w-]{32}"),
    ("Notion", r"ntn_\d{11}[A-Za-z0-9]{35}"),
    ("Octopus Deploy", r"API-(?=[A-Z]*\d)[A-Z0-9]{26}\b"),
    ("OpenShift", r"sha256~[\w-]{43}"),
    ("Perplexity", r"pplx-[A-Za-z0-9]{48}"),
    ("PlanetScale", r"pscale_(?:tkn|oauth|pw)_[\w=.-]{32,64}"),
    ("Postman", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("Prefect", r"pnu_[A-Za-z0-9]{36}"),
    ("Pulumi", r"pul-[a-f0-9]{40}"),
    ("Readme", r"rdme_[a-z0-9]{70}"),
    ("Scalingo", r"tk-us-[\w-]{48}"),
    ("SendGrid", r"SG\.[\w-]{22}\.[\w-]{43}"),
    ("Brevo", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    ("Sentry", r"sntry[su]_[A-Za-z0-9+/=_]{60,}"),
    ("SettleMint", r"sm_(?:aat|pat|sat)_[A-Za-z0-9]{16}"),
    ("Shippo", r"shippo_(?:live|test)_[a-fA-F0-9]{40}"),
    ("Shopify", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ("Sourcegraph", r"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}"),
    ("Square", r"sq0(?:atp|csp)-[\w-]{22,}|EAAA[\w-]{22,60}"),
    ("Telegram", r"(?:bot)?\d{5,16}:A[\w-]{34}"),  # `bot` as the API's URLs glue it on
    ("Twilio", r"(?:SK|AC)[0-9a-fA-F]{32}\b"),
    ("Typeform", r"tfp_[\w.=-]{59}"),
    ("Yandex", r"t1\.[\w-]+=*\.[\w-]{86}=*|AQVN[\w-]{35,38}"),
)


def issuer_pattern() -> str:
    """One pattern for every issuer's tokens, starting at a word boundary."""
    return r"\b(?:" + "|".join(pattern for _, pattern in ISSUER_TOKENS) + ")"


# Webhook URLs whose path is the credential: the host and the fixed part of the path stay.
WEBHOOK_PATHS: Final[tuple[tuple[str, str], ...]] = (
    ("Slack", r"hooks\.slack\.com/(?:services|workflows|triggers)/"),
    ("Microsoft Teams", r"[\w-]+\.webhook\.office\.com/webhookb2/"),
    ("Discord", r"(?:discord(?:app)?\.com)/api/webhooks/"),
    ("SoftLayer", r"api\.softlayer\.com/soap/v3(?:\.1)?/"),
)


def webhook_pattern() -> str:
    """Group 1: a webhook's scheme, host and fixed path; then the path that is its secret."""
    hosts = "|".join(pattern for _, pattern in WEBHOOK_PATHS)
    return rf"(\bhttps?://(?:{hosts}))[\w@+/=-]{{16,}}"
