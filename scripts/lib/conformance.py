"""The bookkeeping of scripts/sdk-conformance: reads the outcomes of one suite's run, compares
them with the suite's committed list of expected failures, prints the counts and, after a full
run, writes them into the README's table. It starts nothing and runs no test.

    conformance.py rust-outcomes LOG OUTCOMES       libtest's output -> outcome lines
    conformance.py compare SUITE OUTCOMES LIST [--full] [--readme README]

Outcome lines are `outcome<TAB>test id<TAB>first line of the error` (outcome: passed, failed,
skipped). A list holds one test id a line with its reason after `#`; an id written with a
leading `?` is unsettled (it depends on timing), so either outcome is accepted and reported.
"""
import datetime
import re
import sys

README_START = "<!-- conformance-counts:start -->"
README_END = "<!-- conformance-counts:end -->"
TABLE_HEAD = [
    "| SDK | version | tests | passed | failed | skipped | run on |",
    "|---|---|---|---|---|---|---|",
]
SUITE_NAMES = {
    "python-4.17.1": ("Python `azure-cosmos`", "4.17.1", "`tests/ -m cosmosEmulator`"),
    "python-4.5.1": ("Python `azure-cosmos`", "4.5.1", "`test/`, every file"),
    "rust-1.1.0-beta.1": ("Rust `azure_data_cosmos`", "1.1.0-beta.1", "`tests/emulator.rs`"),
}


def read_outcomes(path):
    """Maps each test id to (outcome, message)."""
    outcomes = {}
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 2:
                outcomes[fields[1]] = (fields[0], fields[2] if len(fields) > 2 else "")
    return outcomes


def read_list(path):
    """Maps each listed test id to (unsettled, reason)."""
    listed = {}
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            entry, _, reason = line.partition("#")
            entry = entry.strip()
            if not entry:
                continue
            unsettled = entry.startswith("?")
            listed[entry.lstrip("?").strip()] = (unsettled, reason.strip())
    return listed


def rust_outcomes(log_path, out_path):
    """Turns libtest's `test NAME ... ok|FAILED|ignored` lines and the panic message of each
    failure's captured output into outcome lines. Only the text a test prints is read, so this
    needs libtest's pretty format (not `--quiet`)."""
    result = re.compile(r"^test (\S+)(?: - should panic)? \.\.\. (ok|FAILED|ignored)")
    section = re.compile(r"^---- (\S+) stdout ----$")
    kinds = {"ok": "passed", "FAILED": "failed", "ignored": "skipped"}
    outcomes, messages, current = {}, {}, None
    with open(log_path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            line = line.rstrip("\n")
            if match := result.match(line):
                outcomes[match.group(1)] = kinds[match.group(2)]
            elif match := section.match(line):
                current = match.group(1)
            elif current and current not in messages and line.strip():
                # The panic's own line names the thread and place; the message follows it.
                if not (line.startswith("thread '") and "panicked at" in line):
                    messages[current] = line.strip()[:300]
    with open(out_path, "w", encoding="utf-8") as out:
        for name, outcome in outcomes.items():
            out.write(f"{outcome}\t{name}\t{messages.get(name, '')}\n")


def compare(suite, outcomes, listed, full):
    """Prints what differs from the list; returns whether the run conforms. A failure that is
    not listed fails the run; so does a listed test that now passes (the list only shrinks), and,
    after a full run, a listed test that did not run at all."""
    problems = 0
    for test, (outcome, message) in sorted(outcomes.items()):
        entry = listed.get(test)
        if outcome == "failed" and entry is None:
            print(f"{suite}: UNEXPECTED FAILURE {test}: {message}")
            problems += 1
        elif entry and entry[0]:
            print(f"{suite}: unsettled {test}: {outcome} ({entry[1]})")
        elif entry and outcome == "passed":
            print(f"{suite}: NOW PASSES {test}: remove it from the list of expected failures")
            problems += 1
        elif entry and outcome == "skipped":
            print(f"{suite}: skipped, though listed as failing: {test}")
    if full:
        for test in sorted(set(listed) - set(outcomes)):
            print(f"{suite}: LISTED BUT NOT RUN {test}: remove it or fix its id")
            problems += 1
    return problems == 0


def counts(outcomes):
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    for outcome, _ in outcomes.values():
        totals[outcome] = totals.get(outcome, 0) + 1
    return totals


def update_readme(path, suite, totals):
    """Replaces this suite's row of the table between the markers, keeping the other rows."""
    with open(path, encoding="utf-8") as readme:
        text = readme.read()
    start, end = text.index(README_START), text.index(README_END)
    rows = {}
    for line in text[start + len(README_START) : end].splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 7 and cells[1] not in ("version", "---"):
            rows[(cells[0], cells[1])] = line
    sdk, version, tests = SUITE_NAMES[suite]
    ran = sum(totals.values())
    today = datetime.date.today().isoformat()
    rows[(sdk, version)] = (
        f"| {sdk} | {version} | {tests} | {totals['passed']} of {ran} | {totals['failed']} "
        f"| {totals['skipped']} | {today} |"
    )
    order = [(SUITE_NAMES[name][0], SUITE_NAMES[name][1]) for name in SUITE_NAMES]
    body = TABLE_HEAD + [rows[key] for key in order if key in rows]
    text = text[: start + len(README_START)] + "\n" + "\n".join(body) + "\n" + text[end:]
    with open(path, "w", encoding="utf-8") as readme:
        readme.write(text)


def main(argv):
    if argv[:1] == ["rust-outcomes"] and len(argv) == 3:
        rust_outcomes(argv[1], argv[2])
        return 0
    if argv[:1] != ["compare"] or len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    suite, outcomes_path, list_path = argv[1:4]
    full = "--full" in argv
    outcomes = read_outcomes(outcomes_path)
    if not outcomes:
        print(f"{suite}: no test ran")
        return 1
    conforms = compare(suite, outcomes, read_list(list_path), full)
    totals = counts(outcomes)
    print(
        f"{suite}: {totals['passed']} passed, {totals['failed']} failed, "
        f"{totals['skipped']} skipped of {len(outcomes)}"
        f" ({'a full run' if full else 'a subset'}; {'as expected' if conforms else 'NOT as expected'})"
    )
    if full and "--readme" in argv:
        update_readme(argv[argv.index("--readme") + 1], suite, totals)
    return 0 if conforms else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
