"""Ten crash cycles (SIGKILL mid-load, restart, verify) in the suite; `scripts/crash-cycles
--cycles 100` is the full run. What each cycle checks is in `crash_cycles.py`."""

from crash_cycles import Options, run

CI_CYCLES = 10


def test_ten_crash_cycles_lose_nothing_acknowledged(tmp_path):
    figures, seed, violation = run(Options(cycles=CI_CYCLES, data_dir=tmp_path / "data", log=False))
    print(figures.summary(seed))
    assert violation is None, f"seed {seed}: {violation}"
    assert figures.cycles == CI_CYCLES
    assert sum(figures.acknowledged.values()) > 0
    assert figures.swept_after_restart > 0
