"""The slowest tests and one closing count, from the JUnit reports of this run's pytest calls.

    python scripts/test-report.py [--slowest N] REPORT.xml...

pytest prints its own slowest tests per call; CI makes several calls (the fast tier, the service
suites, the image), so this reads their reports together: the N slowest tests over all of them
(set-up, call and tear-down, as pytest's JUnit report counts a test's time), then a last line
``tests: N passed, N failed, N skipped`` over every report. A report that is missing or cut
short (a run that died) is named and skipped; what was read is still told.
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Case:
    name: str
    seconds: float
    outcome: str


def cases(report: Path) -> list[Case]:
    # Our own pytest's reports, not input from outside.
    root = ET.parse(report).getroot()  # noqa: S314
    found = []
    for case in root.iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped":
                outcome = "skipped"
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        found.append(Case(name=name, seconds=float(case.get("time") or 0.0), outcome=outcome))
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slowest", type=int, default=20)
    parser.add_argument("reports", nargs="*", type=Path)
    args = parser.parse_args(argv)
    read: list[Case] = []
    for report in args.reports:
        try:
            read.extend(cases(report))
        except (OSError, ET.ParseError) as exc:
            print(f"  (report {report} not read: {exc})")
    if not read:
        return 0
    print(f"== the {args.slowest} slowest tests (seconds, set-up and tear-down included)")
    for case in sorted(read, key=lambda c: c.seconds, reverse=True)[: args.slowest]:
        print(f"  {case.seconds:8.1f}  {case.name}")
    counts = Counter(case.outcome for case in read)
    line = f"tests: {counts['passed']} passed, {counts['failed']} failed"
    if counts["skipped"]:
        line += f", {counts['skipped']} skipped"
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
