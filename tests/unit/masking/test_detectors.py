"""Each detector on its own: what it masks, and the look-alike it must leave alone."""

from __future__ import annotations

from collections.abc import Iterable

import phonenumbers
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from phonenumbers import PhoneNumberFormat, PhoneNumberType

from minds.domain.masking import (
    LineMasker,
    MaskKind,
    iban_valid,
    is_phone_number,
    luhn_valid,
    mask_text,
)
from minds.domain.masking.checks import (
    IBAN_LENGTHS,
    NANP_REGIONS,
    TRUNK_ZERO_REGIONS,
    nino_valid,
    ssn_valid,
)


def masked(text: str) -> str:
    return mask_text(text)[0]


# --- e-mail addresses ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("from jürgen.müller@bücher.example", "from [email]"),
        ("to 用户@例子.广告 now", "to [email] now"),
        ('reply "john doe"@example.com', "reply [email]"),
        ('x "a\\"b"@example.org y', "x [email] y"),
        ("<Bob+alerts@mail.example.co.uk>", "<[email]>"),
    ],
)
def test_internationalised_and_quoted_addresses_are_masked(text: str, expected: str) -> None:
    assert masked(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "lodash@4.17.21",
        "clone git@github.com:org/repo.git",
        "image@sha256:abc",
        "a@b",
        "connect as postgres@db.ops.svc.cluster.local",
        "app@redis.ops.svc",
    ],
)
def test_package_versions_ssh_remotes_and_cluster_services_are_not_addresses(text: str) -> None:
    assert masked(text) == text


# --- phone numbers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "+44 20 7946 0958",
        "0044 20 7946 0958",
        "+31-20-624-1111",
        "+1 (415) 555-2671",
        "(415) 555-2671",
        "415.555.2671",
        "020 7946 0958",
        "030 901820",
        "06 12 34 56 78",
        "(02) 9374 4000",
    ],
)
def test_international_and_national_phone_numbers_are_masked(text: str) -> None:
    assert masked(f"call {text} now") == "call [phone] now"


@pytest.mark.parametrize(
    "text",
    [
        "2024-01-15",
        "1700000000",
        "10.96.0.1",
        "12:30:45",
        "v1.28.3",
        "+02:00",
        "000123456",
        "1500ms",
        "resourceVersion 48213377",
        "978-3-16-148410-0",
        "+1 day",
        "05.01.2024",
        "01/02/24",
        "07-03-2025",
        "(06/07/2025)",
    ],
)
def test_numbers_that_are_no_phone_stay(text: str) -> None:
    assert masked(f"at {text} ok") == f"at {text} ok"


def test_a_tel_uri_is_masked() -> None:
    assert masked("tel:+31-20-624-1111") == "tel:[phone]"


def test_a_number_no_numbering_plan_knows_is_not_a_phone() -> None:
    # The shape of a phone number, but +999 is no country code.
    assert is_phone_number("+999 123 456 789", (None,)) is False
    assert masked("call +999 123 456 789") == "call +999 123 456 789"


# --- IBANs and cards -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("iban", "valid"),
    [
        ("DE89370400440532013000", True),
        ("GB82WEST12345698765432", True),
        ("gb82west12345698765432", True),
        ("DE89370400440532013001", False),  # one digit off: the checksum fails
        ("DE8937040044", False),  # too short
        ("DE893704004405320130001", False),  # a German IBAN has 22 characters
    ],
)
def test_iban_checksum(iban: str, valid: bool) -> None:
    assert iban_valid(iban) is valid


def test_a_grouped_iban_is_masked_and_the_next_word_kept() -> None:
    assert masked("to DE89 3704 0044 0532 0130 00 from acct") == "to [iban] from acct"
    # One digit off: the mod-97 check fails (and the digits pass no Luhn check either).
    assert masked("bad DE89 3704 0044 0532 0130 02") == "bad DE89 3704 0044 0532 0130 02"


@pytest.mark.parametrize(
    ("number", "valid"),
    [("4111111111111111", True), ("4111111111111112", False), ("79927398713", True)],
)
def test_luhn(number: str, valid: bool) -> None:
    assert luhn_valid(number) is valid


@pytest.mark.parametrize(
    "card", ["4111 1111 1111 1111", "5500-0000-0000-0004", "3782 822463 10005", "6011111111111117"]
)
def test_cards_with_and_without_separators_are_masked(card: str) -> None:
    assert masked(f"card {card} ok") == "card [card] ok"


# --- tokens, Basic credentials, URLs -------------------------------------------------------


def test_bearer_tokens_in_free_text_are_masked_but_not_prose() -> None:
    assert masked("sent Bearer 5f2b8c1e9d7a4b3c6e0f to it") == "sent Bearer [token] to it"
    assert masked("Authorization: Bearer mF_9.B5f-4.1JqM") == "Authorization: Bearer [token]"
    assert masked("the bearer of bad news") == "the bearer of bad news"


def test_basic_credentials_are_masked_only_when_they_decode_to_user_and_password() -> None:
    assert masked("we sent basic YWRtaW46aHVudGVyMg== again") == "we sent basic [secret] again"
    # "basic c2V0dXA=" is base64 of "setup": no colon, so no credentials.
    assert masked("basic c2V0dXA= done") == "basic c2V0dXA= done"
    assert masked("basic setup finished") == "basic setup finished"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgres://app:pa55@db:5432/x", "postgres://app:[secret]@db:5432/x"),
        ("redis://:s3cret@redis:6379/0", "redis://:[secret]@redis:6379/0"),
        ("mysql://root:p@ss@mysql/shop", "mysql://root:[secret]@mysql/shop"),
        (
            "https://api.example.com/x?access_token=9f8e7d",
            "https://api.example.com/x?access_token=[secret]",
        ),
        ("postgres://db.internal:5432/app", "postgres://db.internal:5432/app"),
    ],
)
def test_passwords_in_urls_are_masked(url: str, expected: str) -> None:
    assert masked(url) == expected


def test_a_password_said_in_prose_is_masked_but_not_a_word() -> None:
    assert masked("the admin password is: Spr1ng2025!") == "the admin password is: [secret]"
    assert masked("the password is required") == "the password is required"


# --- keys ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("dbPass=Tr0ub4dor", "dbPass=[secret]"),
        ("pwd: qwerty123", "pwd: [secret]"),
        ("auth=ZXhhbXBsZQ", "auth=[secret]"),
        ('"privateKey": "MIIEvQ"', '"privateKey": "[secret]"'),
        ("password: correct horse battery staple", "password: [secret]"),
        ("password=hunter2 user=bob", "password=[secret] user=bob"),
        ("error: token=abc123 rejected", "error: token=[secret] rejected"),
        ("--set db.auth.rootPassword=R00t app", "--set db.auth.rootPassword=[secret] app"),
        ("run --password hunter2 --verbose", "run --password [secret] --verbose"),
        ("{name: DB_PASSWORD, value: hunter2}", "{name: DB_PASSWORD, value: [secret]}"),
        ('{"name": "API_TOKEN", "value": "t-1"}', '{"name": "API_TOKEN", "value": "[secret]"}'),
    ],
)
def test_values_of_secret_keys_are_masked(text: str, expected: str) -> None:
    assert masked(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "passwordPolicy: strong",
        "maxTokens: 512",
        "secretRef: db-credentials",
        "password: ${DB_PASSWORD}",
        "token: <redacted>",
        "auth_enabled=true",
        "secret=false",
        "{name: LOG_LEVEL, value: debug}",
    ],
)
def test_keys_about_secrets_and_references_stay(text: str) -> None:
    assert masked(text) == text


def test_a_long_run_of_harmless_keys_is_read_in_linear_time() -> None:
    # Each `a:` is a key that is not secret; its value must not be read again for each.
    text = "a:" * 20_000
    assert masked(text) == text


# --- addresses -----------------------------------------------------------------------------


def test_public_resolvers_are_services_not_people() -> None:
    assert masked("nameserver 8.8.8.8 and 2606:4700:4700::1111") == (
        "nameserver 8.8.8.8 and 2606:4700:4700::1111"
    )


def test_public_addresses_are_masked_and_the_clusters_own_kept() -> None:
    assert masked("from 81.2.69.160 via 10.0.0.5") == "from [ip] via 10.0.0.5"
    assert masked("peer 2001:db8::1 and fd00::5") == "peer [ip] and fd00::5"
    assert (
        masked("mapped ::ffff:81.2.69.160 and ::ffff:10.0.0.1") == "mapped [ip] and ::ffff:10.0.0.1"
    )


# --- blocks across lines -------------------------------------------------------------------

PEM = """\
key follows
-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ
AAAAAAABAAAAMwAAAAtzc2gtZWQyNTUxOQAAACDx
-----END OPENSSH PRIVATE KEY-----
user alice@example.com"""


def test_a_private_key_across_lines_is_masked_as_a_block() -> None:
    assert mask_text(PEM) == (
        "key follows\n-----BEGIN OPENSSH PRIVATE KEY-----\n[secret]\n[secret]\n"
        "-----END OPENSSH PRIVATE KEY-----\nuser [email]",
        {"secret": 1, "email": 1},
    )


def test_a_private_key_cut_before_its_end_is_masked_to_the_end() -> None:
    text = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nu\nwNSk3yByxZpY"
    assert masked(text) == "-----BEGIN EC PRIVATE KEY-----\n[secret]\n[secret]"


def test_a_certificate_is_public_and_stays() -> None:
    text = "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE\n-----END CERTIFICATE-----"
    assert masked(text) == text


def test_a_yaml_block_under_a_secret_key_is_masked_until_the_indentation_returns() -> None:
    text = "db:\n  password: |\n    line-one\n    line-two\n\n  user: app\nnext: 1"
    assert mask_text(text) == (
        "db:\n  password: |\n    [secret]\n    [secret]\n\n  user: app\nnext: 1",
        {"secret": 1},
    )


def test_a_yaml_mapping_under_a_secret_key_is_masked_whole() -> None:
    text = "credentials:\n  username: mailer\n  secret: m41l3r\nhost: smtp"
    assert masked(text) == "credentials:\n  [secret]\n  [secret]\nhost: smtp"


def test_a_json_object_under_a_secret_key_is_masked_until_it_closes() -> None:
    text = '{\n  "auth": {\n    "user": "a",\n    "pass": "b"\n  },\n  "port": 8080\n}'
    assert masked(text) == '{\n  "auth": {\n    [secret]\n    [secret]\n  },\n  "port": 8080\n}'


def test_an_env_value_on_the_line_after_its_secret_name_is_masked() -> None:
    text = (
        "env:\n- name: DB_PASSWORD\n  # rotated\n  value: hunter2\n- name: LOG_LEVEL\n  value: info"
    )
    assert masked(text) == (
        "env:\n- name: DB_PASSWORD\n  # rotated\n  value: [secret]\n"
        "- name: LOG_LEVEL\n  value: info"
    )


def test_an_env_value_from_a_secret_reference_is_not_waited_for() -> None:
    text = "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef: {name: db}\n  value: x"
    assert masked(text) == text


def test_a_block_in_crlf_text_is_masked_and_the_line_ends_kept() -> None:
    text = "db:\r\n  password: |\r\n    line-one\r\n  user: app\r\n"
    assert masked(text) == "db:\r\n  password: |\r\n    [secret]\r\n  user: app\r\n"


def test_lines_fed_one_at_a_time_are_masked_as_the_whole_text() -> None:
    masker = LineMasker()
    fed = [masker.mask(line)[0] for line in PEM.split("\n")]
    assert "\n".join(fed) == masked(PEM)


# --- every numbering plan's own example numbers ---------------------------------------------


def _examples(regions: Iterable[str]) -> list[tuple[str, str]]:
    """libphonenumber's example fixed-line and mobile number of each region."""
    found = []
    for region in sorted(regions):
        for kind in (PhoneNumberType.FIXED_LINE, PhoneNumberType.MOBILE):
            number = phonenumbers.example_number_for_type(region, kind)
            if number is not None:
                found.append((region, number))
    return found


@pytest.mark.parametrize(("region", "number"), _examples(phonenumbers.SUPPORTED_REGIONS))
def test_every_regions_example_numbers_are_masked_in_international_format(
    region: str, number: phonenumbers.PhoneNumber
) -> None:
    for form in (PhoneNumberFormat.INTERNATIONAL, PhoneNumberFormat.E164):
        text = phonenumbers.format_number(number, form)
        assert masked(f"call {text} now") == "call [phone] now", (region, text)


@pytest.mark.parametrize(("region", "number"), _examples([*TRUNK_ZERO_REGIONS, *NANP_REGIONS]))
def test_example_numbers_are_masked_in_national_format(
    region: str, number: phonenumbers.PhoneNumber
) -> None:
    text = phonenumbers.format_number(number, PhoneNumberFormat.NATIONAL)
    assert masked(f"call {text} now") == "call [phone] now", (region, text)


# --- generated IBANs -----------------------------------------------------------------------

_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@st.composite
def ibans(draw: st.DrawFn) -> str:
    """A random IBAN with correct check digits, grouped in fours or not."""
    country = draw(st.sampled_from(sorted(IBAN_LENGTHS)))
    length = IBAN_LENGTHS[country] - 4
    bban = draw(st.text(alphabet=_ALNUM, min_size=length, max_size=length))
    remainder = int("".join(str(int(char, 36)) for char in bban + country + "00")) % 97
    iban = f"{country}{98 - remainder:02d}{bban}"
    if draw(st.booleans()):
        return " ".join(iban[i : i + 4] for i in range(0, len(iban), 4))
    return iban


@settings(max_examples=300)
@given(ibans())
def test_a_generated_iban_never_survives(iban: str) -> None:
    assert iban_valid(iban.replace(" ", ""))
    assert masked(f"refund to {iban} today") == "refund to [iban] today"


# --- generated secrets under secret keys ---------------------------------------------------

SECRET_NAMES = ["password", "dbPass", "DB_PASSWORD", "apiKey", "auth", "pwd", "client_secret"]
SYNTAXES = [
    "{key}={value}",
    "{key}: {value}",
    '"{key}": "{value}"',
    "{key} = '{value}'",
    "--{key} {value}",
    "--{key}={value}",
    "env:\n- name: {key}\n  value: {value}",
    '{{"name": "{key}", "value": "{value}"}}',
    "{key}: |\n  {value}\n  {value}",
    '"{key}": {{\n  "v": "{value}"\n}}',
]
VALUE_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!@#$%^*_-+/.~"


@settings(max_examples=500)
@given(
    st.sampled_from(SECRET_NAMES),
    st.sampled_from(SYNTAXES),
    st.text(alphabet=VALUE_CHARS, min_size=6, max_size=40),
    st.sampled_from(["", "login failed; ", "ERROR "]),
)
def test_a_generated_value_under_a_secret_key_never_survives(
    key: str, syntax: str, value: str, before: str
) -> None:
    # Values that read as a flag, a redaction or a variable reference are documented exceptions,
    # and a value spelled like a placeholder's name would be found in the placeholder.
    assume(not value.startswith(("-", "*", "$")))
    assume(value.lower() not in {"redacted", *(kind.value for kind in MaskKind)})
    # A value spelled like the text around it ("failed" after "login failed;") is found there.
    assume(value not in before + syntax.format(key=key, value=""))
    text = before + syntax.format(key=key, value=value)
    assert value not in masked(text), text


# --- cloud credentials beside their key ids -------------------------------------------------

AWS_SECRET = "JskLsy1CENFAKEKEY4csK+q1Z5Vc30Z2mjc08Snm"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"AKIAIOSFODNN7EXAMPLE:{AWS_SECRET}", "[access-key]:[secret]"),
        (f"ci,AKIAIOSFODNN7EXAMPLE,{AWS_SECRET},2030", "ci,[access-key],[secret],2030"),
        (f"secret {AWS_SECRET} for AKIAIOSFODNN7EXAMPLE", "secret [secret] for [access-key]"),
        (f"aws_secret_access_key {AWS_SECRET}", "aws_secret_access_key [secret]"),
        (
            "aws configure set aws_session_token IQoJb3FAKE",
            "aws configure set aws_session_token [secret]",
        ),
        ("aws configure set region eu-west-1", "aws configure set region eu-west-1"),
    ],
)
def test_an_aws_secret_beside_its_key_id_or_its_name_is_masked(text: str, expected: str) -> None:
    assert masked(text) == expected


def test_a_hex_commit_id_beside_a_key_id_is_no_secret() -> None:
    commit = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # 40 characters, but no capitals
    assert masked(f"AKIAIOSFODNN7EXAMPLE commit {commit}") == f"[access-key] commit {commit}"


# --- passwords on command lines ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mysql -uroot -pS3cret shop", "mysql -uroot -p[secret] shop"),
        ("/usr/bin/mysqldump -p'a b' db", "/usr/bin/mysqldump -p[secret] db"),
        ("sshpass -p S3cret ssh -p 22 h", "sshpass -p [secret] ssh -p 22 h"),
        ("redis-cli -h r -p 6379 -a S3cret ping", "redis-cli -h r -p 6379 -a [secret] ping"),
        ("curl -u ops:S3cret https://x", "curl -u ops:[secret] https://x"),
        ("curl --user=ops:S3cret https://x", "curl --user=ops:[secret] https://x"),
        ("docker login -u bot -p S3cret reg", "docker login -u bot -p [secret] reg"),
        ("ldapsearch -x -w S3cret -b dc=x", "ldapsearch -x -w [secret] -b dc=x"),
        ("sqlcmd -S db -P S3cret", "sqlcmd -S db -P [secret]"),
        ("openssl rsa -passin pass:S3cret -in k", "openssl rsa -passin pass:[secret] -in k"),
        ("db pw Winter2025!", "db pw [secret]"),
    ],
)
def test_a_password_in_a_commands_own_flag_is_masked(text: str, expected: str) -> None:
    assert masked(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "mysql -p",
        "mysql -u root -p shop",  # `-p` and a space: mysql asks, and `shop` is the database
        "mysql -P 3306 -h db",
        "docker run -p 8080:80 nginx",
        "ssh -p 2222 host",
        "sshpass -f /run/pass ssh host",
        "redis-cli -p 6379 ping",
        "curl -u alice https://x",
        "openssl rsa -passin env:KEY_PASS -in k",
        "app --password-file /etc/pw",
        "pwd /home/app",
        "mysql -u app -p; echo -pS3cret",  # after `;` is another command
    ],
)
def test_flags_that_are_no_passwords_stay(text: str) -> None:
    assert masked(text) == text


# --- cards, national identifiers, versions -------------------------------------------------


@pytest.mark.parametrize(
    "card", ["4111.1111.1111.1111", "4111_1111_1111_1111", "3782.822463.10005"]
)
def test_cards_grouped_by_dots_or_underscores_are_masked(card: str) -> None:
    assert masked(f"card {card} ok") == "card [card] ok"


@pytest.mark.parametrize(
    "text",
    [
        "4111.1111.1111.1112",  # Luhn fails
        "4111.1111_1111.1111",  # mixed separators
        "1.2.840.113549.1.1.11",
        "41.1111.1111.11111",
        "2024.0115.1030.4411",
        "ts 1705314645.123456",
    ],
)
def test_dotted_numbers_that_are_no_card_stay(text: str) -> None:
    assert masked(text) == text


@pytest.mark.parametrize(
    ("parts", "valid"),
    [
        (("123", "45", "6789"), True),
        (("078", "05", "1120"), True),
        (("000", "12", "3456"), False),
        (("666", "12", "3456"), False),
        (("912", "34", "5678"), False),
        (("123", "00", "4567"), False),
        (("123", "45", "0000"), False),
    ],
)
def test_ssn_validity(parts: tuple[str, str, str], valid: bool) -> None:
    assert ssn_valid(*parts) is valid


@pytest.mark.parametrize(
    ("nino", "valid"),
    [
        ("AB123456C", True),
        ("AB 12 34 56 C", True),
        ("QQ123456C", False),  # Q never starts one
        ("AO123456C", False),  # O never comes second
        ("GB123456A", False),  # never allocated
        ("AB123456E", False),  # the suffix is A to D
    ],
)
def test_nino_validity(nino: str, valid: bool) -> None:
    assert nino_valid(nino) is valid


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ssn 536-22-1234", "ssn [national-id]"),
        ("SSN: 219099999", "SSN: [national-id]"),
        ("social security number 078 05 1120", "social security number [national-id]"),
        ("NI AB 12 34 56 C", "NI [national-id]"),
        ("nino=CE123456D", "nino=[national-id]"),
        ("area 000-12-3456", "area 000-12-3456"),
        ("part 123-45-6789-01", "part 123-45-6789-01"),
        ("number 219099999", "number 219099999"),  # undashed only after its label
        ("build RC1234567", "build RC1234567"),
    ],
)
def test_national_identifiers(text: str, expected: str) -> None:
    assert masked(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("version 4.1.1.1", "version 4.1.1.1"),
        ("Chrome/120.0.0.0 Safari/537.36", "Chrome/120.0.0.0 Safari/537.36"),
        ("GET http://81.2.69.160/x", "GET http://[ip]/x"),
    ],
)
def test_four_part_versions_are_no_addresses(text: str, expected: str) -> None:
    assert masked(text) == expected


# --- tokens by their issuer's shape ----------------------------------------------------------


def test_a_discord_token_is_masked_only_when_it_carries_a_bot_id() -> None:
    token = "MTAwMDAwMDAwMDAwMDAwMDQy.FAKEab.cdefghijklmnopqrstuvwxyz012"
    assert masked(f"bot {token} up") == "bot [token] up"
    other = "MzI0ZmFrZS1ub3QtYS1ib3Q.abcdef.ghijklmnopqrstuvwxyz0123456"
    assert masked(other) == other


def test_a_jwt_in_base64_is_masked_only_when_it_decodes_to_one() -> None:
    encoded = "ZXlKaGJHY2lPaUpJVXpJMU5pSjkuZXlKemRXSWlPaUptWVd0bEluMC5GQUtF"
    assert masked(f"dump {encoded}") == "dump [jwt]"
    plain = "ZXlKfakeButNotAJwtAtAllFAKEFAKEFAKEFAKEFAKEFAKEFAKE"
    assert masked(f"dump {plain}") == f"dump {plain}"


def test_a_webhook_url_keeps_its_host_and_loses_its_secret_path() -> None:
    url = "https://hooks.slack.com/services/T0FAKE000/B0FAKE000/FAKEFAKEFAKEFAKEFAKEFAKE"
    assert masked(url) == "https://hooks.slack.com/services/[token]"


# --- references to Secrets, Secret manifests, key files ------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("secretRef: db-creds", "secretRef: db-creds"),
        ("secretRef: Pa55w0rd!2024", "secretRef: [secret]"),
        ("secretKeyRef: {name: db, key: password}", "secretKeyRef: {name: db, key: password}"),
        ("secretKeyRef: {name: db, key: 'S3cr3t!'}", "secretKeyRef: {name: db, key: '[secret]'}"),
        (
            '{"secretRef": {"name": "db", "value": "x1"}}',
            '{"secretRef": {"name": "db", "value": "[secret]"}}',
        ),
    ],
)
def test_a_secret_written_in_a_reference_is_masked_and_the_names_kept(
    text: str, expected: str
) -> None:
    assert masked(text) == expected


def test_a_reference_over_lines_keeps_its_names_and_what_follows_it() -> None:
    text = "envFrom:\n- secretRef:\n    name: db\n    value: S3cr3t!\n  prefix: DB_\nnext: 1"
    assert masked(text) == (
        "envFrom:\n- secretRef:\n    name: db\n    value: [secret]\n  prefix: DB_\nnext: 1"
    )


SECRET_MANIFEST = """\
kind: Secret
metadata:
  ownerReferences:
  - kind: Deployment
data:
  url: cG9zdGdyZXM6Ly94
---
kind: ConfigMap
data:
  url: keep"""


def test_the_data_of_a_secret_manifest_is_masked_until_the_manifest_ends() -> None:
    assert masked(SECRET_MANIFEST) == SECRET_MANIFEST.replace(
        "cG9zdGdyZXM6Ly94", "[secret]"
    ).replace("  url: [secret]", "  [secret]")


def test_a_putty_keys_private_lines_and_an_ssh2_key_are_masked() -> None:
    putty = (
        "PuTTY-User-Key-File-2: ssh-rsa\nPublic-Lines: 1\nAAAApub\n"
        "Private-Lines: 2\nAAAAone\nAAAAtwo\nPrivate-MAC: 00"
    )
    assert masked(putty) == putty.replace("AAAAone\nAAAAtwo", "[secret]\n[secret]")
    ssh2 = (
        "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\\nP2/56wAAAFAKE\\n"
        "---- END SSH2 ENCRYPTED PRIVATE KEY ----"
    )
    assert masked(f'{{"key": "x", "k2": "{ssh2}"}}') == '{"key": "x", "k2": "[secret]"}'


@pytest.mark.parametrize(
    ("secret", "after"),
    [
        # A new document.
        ("kind: Secret\ndata:\n  url: cG9zdGdyZXM6Ly94\n", "---\ndata:\n  url: keep"),
        # The next item of a list, of another kind.
        (
            "- kind: Secret\n  data:\n    url: cG9zdGdyZXM6Ly94\n",
            "- kind: ConfigMap\n  data:\n    url: keep",
        ),
    ],
)
def test_a_secret_manifest_ends_where_the_next_object_starts(secret: str, after: str) -> None:
    assert masked(secret + after) == secret.replace("url: cG9zdGdyZXM6Ly94", "[secret]") + after
