"""Unit tests of the history checker (histories.py): hand-written histories both ways, and a
randomized comparison with a brute-force search over every order of small histories."""

from __future__ import annotations

import itertools
import random

from histories import ABSENT, INFINITY, Op, check, session_violations, step, etag_values_of

K = "k"


def op(client, kind, invoked, returned, value=None, ok=True, etag=None, if_match=None):
    return Op(client, K, kind, invoked, returned, value=value, ok=ok, etag=etag, if_match=if_match)


def test_a_read_after_a_completed_write_that_answers_the_old_value_is_not_linearizable():
    history = [op("a", "upsert", 0, 1, "v1", etag="e1"), op("a", "upsert", 2, 3, "v2", etag="e2"),
               op("b", "read", 4, 5, "v1", etag="e1")]
    verdict = check(history)
    assert not verdict.ok and verdict.key == K
    assert "read('v1')" in verdict.explain()


def test_a_read_overlapping_the_write_may_answer_either_value():
    for seen in ("v1", "v2"):
        history = [op("a", "upsert", 0, 1, "v1", etag="e1"), op("a", "upsert", 2, 5, "v2", etag="e2"),
                   op("b", "read", 3, 4, seen)]
        assert check(history).ok, seen


def test_a_lost_acknowledged_write_is_not_linearizable():
    history = [op("a", "create", 0, 1, "v1", etag="e1"), op("b", "read", 2, 3, ABSENT)]
    assert not check(history).ok


def test_two_successful_if_match_writes_on_one_etag_are_not_linearizable():
    history = [op("a", "upsert", 0, 1, "v1", etag="e1"),
               op("a", "replace_if_match", 2, 4, "v2", etag="e2", if_match="e1"),
               op("b", "replace_if_match", 3, 5, "v3", etag="e3", if_match="e1")]
    assert not check(history).ok
    history[2].ok = False
    assert check(history).ok


def test_a_412_when_the_etag_still_held_is_not_linearizable():
    history = [op("a", "upsert", 0, 1, "v1", etag="e1"),
               op("b", "replace_if_match", 2, 3, "v2", ok=False, if_match="e1")]
    assert not check(history).ok


def test_overlapping_operations_linearizable_only_in_one_order():
    # The two writes overlap; the read after both answers v1, so only "v2 then v1" fits, and the
    # read during both (v2) fits that order too.
    history = [op("a", "upsert", 0, 3, "v1"), op("b", "upsert", 1, 2, "v2"),
               op("c", "read", 1.5, 2.5, "v2"), op("c", "read", 4, 5, "v1")]
    assert check(history).ok
    # A later read answering v2 again needs "v1 then v2" as well: no order gives both.
    history.append(op("d", "read", 6, 7, "v2"))
    verdict = check(history)
    assert not verdict.ok and "read('v2')" in verdict.explain()


def test_an_indeterminate_write_may_or_may_not_have_taken_effect():
    taken = [op("a", "upsert", 0, 1, "v1"), op("a", "upsert", 2, INFINITY, "v2", ok=None),
             op("b", "read", 3, 4, "v2")]
    assert check(taken).ok
    not_taken = [op("a", "upsert", 0, 1, "v1"), op("a", "upsert", 2, INFINITY, "v2", ok=None),
                 op("b", "read", 3, 4, "v1")]
    assert check(not_taken).ok
    # ... but not taken, then taken, then gone again.
    flapping = not_taken + [op("b", "read", 5, 6, "v2"), op("b", "read", 7, 8, "v1")]
    assert not check(flapping).ok


def test_an_indeterminate_write_cannot_take_effect_before_it_was_sent():
    history = [op("b", "read", 0, 1, "v2"), op("a", "upsert", 2, INFINITY, "v2", ok=None)]
    assert not check(history).ok


def test_delete_then_read_absent_and_replace_of_absent_refused():
    history = [op("a", "create", 0, 1, "v1"), op("a", "delete", 2, 3),
               op("b", "read", 4, 5, ABSENT), op("b", "replace", 6, 7, "v2", ok=False)]
    assert check(history).ok
    history[3].ok = True
    assert not check(history).ok


def test_session_check_flags_a_client_that_reads_back_past_its_own_write():
    history = [op("a", "upsert", 0, 1, "v1"), op("a", "upsert", 2, 3, "v2"),
               op("b", "read", 2.5, 2.6, "v1"), op("a", "read", 4, 5, "v2")]
    verdict = check(history)
    assert verdict.ok and session_violations(history, verdict.order) == []
    # The same order as found, but the client's read answers its older version.
    history[3].value = "v1"
    orders = {K: [history[0], history[2], history[1], history[3]]}
    assert session_violations(history, orders)


# The brute force: every order of the determinate ops plus every subset of the indeterminate ones,
# kept when it respects real time and every op's outcome fits the register.
def brute_force(history) -> bool:
    etag_values = etag_values_of(history)
    certain = [o for o in history if o.ok is not None]
    doubtful = [o for o in history if o.ok is None]
    for size in range(len(doubtful) + 1):
        for chosen in itertools.combinations(doubtful, size):
            for order in itertools.permutations(certain + list(chosen)):
                if respects_real_time(order) and fits(order, etag_values):
                    return True
    return False


def respects_real_time(order) -> bool:
    return all(not (later.returned < earlier.invoked)
               for position, earlier in enumerate(order) for later in order[position + 1:])


def fits(order, etag_values) -> bool:
    state = ABSENT
    for one in order:
        good, state = step(one, state, etag_values)
        if not good:
            return False
    return True


def random_history(rng: random.Random) -> list:
    history, etags = [], []
    for number in range(rng.randint(1, 6)):
        start = rng.uniform(0, 10)
        end = start + rng.uniform(0.1, 4)
        kind = rng.choice(["read", "upsert", "create", "replace", "replace_if_match", "delete"])
        ok = rng.choice([True, True, False, None]) if kind != "read" else True
        value = f"v{number}" if kind in ("upsert", "create", "replace", "replace_if_match") else None
        if kind == "read":
            value = rng.choice([ABSENT] + [o.value for o in history if o.value is not None] + ["v0"])
        etag = f"e{number}" if ok and kind != "delete" else None
        if_match = rng.choice(etags) if kind == "replace_if_match" and etags else ("e0" if kind == "replace_if_match" else None)
        if kind == "read" and value is not None:
            etag = next((o.etag for o in history if o.value == value and o.etag), None)
        if etag and kind != "read":
            etags.append(etag)
        history.append(Op(rng.choice("abc"), K, kind, start, INFINITY if ok is None else end,
                          value=value, ok=ok, etag=etag, if_match=if_match))
    return history


def test_the_search_agrees_with_the_brute_force_on_random_small_histories():
    rng = random.Random(28)
    outcomes = {True: 0, False: 0}
    for _ in range(3000):
        history = random_history(rng)
        expected = brute_force(history)
        assert check(history).ok == expected, "\n".join(o.describe() for o in history)
        outcomes[expected] += 1
    # Both answers must be common, or the comparison proves little.
    assert outcomes[True] > 300 and outcomes[False] > 300, outcomes
