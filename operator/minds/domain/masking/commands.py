"""Passwords that command lines carry in a flag of their own (`mysql -pS3cret`,
`sshpass -p S3cret`, `curl -u user:S3cret`), by command.

A flag like `-p` means a password only to the command that defines it: to `docker run` it is a
port, and to `mysql` a `-p` with a space after it asks for the password and the next word names
a database. So each entry names its commands, the flag, and whether the value must be glued to
the flag. The flag is looked for among the command's own words, up to the end of the command
(a newline, `;`, `|` or `&`).
"""

from __future__ import annotations

from typing import Final

# Commands (a pattern), the flag, and whether the value is glued to it (`-pS3cret` only).
PASSWORD_FLAGS: Final[tuple[tuple[str, str, bool], ...]] = (
    (r"mysql(?:dump|admin|import|show|check|pump|sh|binlog)?|mariadb(?:-dump|-admin)?", "-p", True),
    (r"sshpass", "-p", False),
    (r"redis-cli|valkey-cli|keydb-cli", "-a", False),
    (r"mongo(?:sh|dump|restore|export|import|stat|top)?", "-p", False),
    (r"ldap(?:search|add|modify|delete|whoami|passwd|compare|modrdn)", "-w", False),
    (r"sqlcmd|bcp|osql", "-P", False),
    (
        r"(?:docker|podman|nerdctl|buildah|skopeo|oras|crane|helm(?:[ \t]+registry)?)"
        r"[ \t]+login",
        "-p",
        False,
    ),
)

# Commands whose `-u`/`--user` flag takes `user:password`.
USERINFO_COMMANDS: Final = r"curl|wget"
USERINFO_FLAGS: Final = r"-u|--user|--proxy-user|-U"

# Where a command's name may start: not inside a word (after a `/` of its path, it may).
_COMMAND_START: Final = r"(?<![\w.-])"
# The command's other words before the flag: anything but what ends a command.
_WORDS_BEFORE: Final = r"(?:[ \t][^\n;|&]*?)??[ \t]"
_SPACES: Final = r"[ \t]*"


def command_password_pattern() -> str:
    """A password a command line carries in a flag: the group named `value…` that matched."""
    flags = "|".join(
        rf"(?:{names})\b{_WORDS_BEFORE}{flag}" + ("" if glued else _SPACES)
        for names, flag, glued in PASSWORD_FLAGS
    )
    return (
        rf"{_COMMAND_START}(?:(?:{flags})(?!-)(?P<value>\"[^\"\n]+\"|'[^'\n]+'|[^\s;|&\"']+)"
        rf"|(?:{USERINFO_COMMANDS})\b{_WORDS_BEFORE}(?:{USERINFO_FLAGS})(?:=|{_SPACES})"
        r"[\"']?[^\s:\"']*:(?P<value2>[^\s\"']+)"
        # openssl's `-passin pass:S3cret` (`env:VAR` and `file:path` say where it is).
        r"|-pass(?:in|out)?[ \t]+pass:(?P<value3>[^\s\"']+))"
    )
