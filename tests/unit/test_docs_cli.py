"""docs/cli.md: every command it gives is run as written by a test, section by section."""

from __future__ import annotations

from minds.devenv.install import repo_root
from tests.fixtures.docs import sections, sh_commands

DOC = repo_root() / "docs" / "cli.md"

#: The sections whose commands a test runs, and which test: a new ```sh block elsewhere
#: must get a test before it is listed here.
RUN_BY = {
    "Versions": "tests/e2e/test_cli_version.py (as a person without, then with, the Role)",
    "Shell completion": "tests/unit/cli/test_version_and_completion.py (in a real bash)",
    "Output": "tests/e2e/test_cli_output.py",
}


def test_every_section_with_commands_is_run_by_a_test() -> None:
    with_commands = {name for name in sections(DOC) if name and sh_commands(DOC, section=name)}
    assert with_commands == set(RUN_BY)
    assert not sh_commands(DOC, section="")  # the preamble gives none
    for test in RUN_BY.values():
        assert (repo_root() / test.split()[0]).is_file(), test
