"""Writes one line per test to the file named by CONFORMANCE_OUTCOMES: its outcome (passed,
failed or skipped), its pytest node id and, for a failure, the first line of the error, tab
and the seconds it took, tab separated. scripts/sdk-conformance compares these lines with the
expected failures; the seconds help choose the subset that CI runs."""
import os

_outcomes = {}
_messages = {}
_seconds = {}


def _first_line(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0][:300] if lines else ""


def pytest_runtest_logreport(report):
    """A test fails when any phase fails; it is skipped when a phase skips and none fails."""
    previous = _outcomes.get(report.nodeid)
    _seconds[report.nodeid] = _seconds.get(report.nodeid, 0.0) + report.duration
    if report.failed:
        if previous != "failed":
            _messages[report.nodeid] = _first_line(report)
        _outcomes[report.nodeid] = "failed"
    elif report.skipped and previous != "failed":
        _outcomes[report.nodeid] = "skipped"
    elif previous is None:
        _outcomes[report.nodeid] = "passed"


def pytest_sessionfinish(session):
    with open(os.environ["CONFORMANCE_OUTCOMES"], "w", encoding="utf-8") as out:
        for nodeid, outcome in _outcomes.items():
            message = _messages.get(nodeid, "").replace("\t", " ")
            out.write(f"{outcome}\t{nodeid}\t{message}\t{_seconds.get(nodeid, 0.0):.2f}\n")
