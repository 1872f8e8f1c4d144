"""The computed shard column spreads rows as intended (MOD(FARM_FINGERPRINT(...), N) of the Java library's sharding sample).

MOD keeps the sign of the fingerprint, so over uniformly spread fingerprints each non-zero
value -(N-1)..N-1 has probability 1/(2N) and zero has 1/N. Over 100,000 random names every
one of the 2N-1 values must occur, and a chi-square test against that distribution must not
reject at 1%. The critical value comes from the Wilson-Hilferty approximation, itself checked
against the exact chi-square tail for even degrees of freedom.
"""

from __future__ import annotations

import math
import random
import string
from collections import Counter
from statistics import NormalDist

import pytest
from google.cloud.spanner_v1 import param_types

from watcher.schema_tools.ddl import ShardColumn, ShardSource, fingerprint, shard_column

NAMES = 100_000
ALPHA = 0.01


# --- the statistics -----------------------------------------------------------------------------------

def chi2_critical(alpha: float, df: int) -> float:
    """The chi-square value exceeded with probability ``alpha`` (Wilson-Hilferty approximation)."""
    z = NormalDist().inv_cdf(1 - alpha)
    h = 2 / (9 * df)
    return df * (1 - h + z * math.sqrt(h)) ** 3


def chi2_survival_even(x: float, df: int) -> float:
    """P(X > x) for a chi-square X with an even number of degrees of freedom (a closed form)."""
    assert df % 2 == 0
    half = x / 2
    term, total = 1.0, 1.0
    for i in range(1, df // 2):
        term *= half / i
        total += term
    return math.exp(-half) * total


def expected_probabilities(shards: int) -> dict[int, float]:
    return {v: (1 / shards if v == 0 else 1 / (2 * shards)) for v in range(-(shards - 1), shards)}


def chi2_statistic(counts: Counter[int], probabilities: dict[int, float]) -> float:
    total = sum(counts.values())
    assert set(counts) <= set(probabilities), f"values outside the expected range: {set(counts) - set(probabilities)}"
    return sum((counts.get(v, 0) - total * p) ** 2 / (total * p) for v, p in probabilities.items())


@pytest.mark.parametrize("df", [2, 4, 10, 20, 36, 100, 200])
@pytest.mark.parametrize("alpha", [0.01, 0.05])
def test_wilson_hilferty_matches_the_exact_tail(df, alpha):
    # Good to a few percent of alpha from two degrees of freedom on: plenty for a 1% test.
    tail = chi2_survival_even(chi2_critical(alpha, df), df)
    assert tail == pytest.approx(alpha, rel=0.03)


@pytest.mark.parametrize("df, table", [(1, 6.635), (3, 11.345), (9, 21.666), (35, 57.342), (99, 134.642)])
def test_wilson_hilferty_matches_tabulated_values(df, table):
    # Published chi-square tables, 1% level, odd degrees of freedom (no closed form to check against).
    assert chi2_critical(0.01, df) == pytest.approx(table, rel=0.01)


def test_exact_tail_formula():
    # df=2 is the exponential distribution with mean 2.
    assert chi2_survival_even(4.0, 2) == pytest.approx(math.exp(-2))
    assert chi2_survival_even(0.0, 36) == pytest.approx(1.0)


# --- the distribution -------------------------------------------------------------------------------

def random_names(count: int, seed: int) -> list[tuple[str | None, str]]:
    rng = random.Random(seed)
    letters = string.ascii_letters + "áéíóúñ -'"
    out = []
    for _ in range(count):
        first = None if rng.random() < 0.1 else "".join(rng.choices(letters, k=rng.randint(3, 12)))
        out.append((first, "".join(rng.choices(letters, k=rng.randint(4, 14)))))
    return out


@pytest.fixture(scope="module")
def names() -> list[tuple[str | None, str]]:
    return random_names(NAMES, seed=20240501)


@pytest.mark.parametrize("shards", [19, 11, 2])
def test_shard_values_follow_the_expected_distribution(names, shards):
    column = shard_column("ShardId", ["FirstName", ShardSource("LastName", not_null=True)], shards)
    counts = Counter(column.shard_of({"FirstName": f, "LastName": last}) for f, last in names)
    assert sorted(counts) == list(column.values)          # all 2N-1 values occur, and no other
    statistic = chi2_statistic(counts, expected_probabilities(shards))
    assert statistic < chi2_critical(ALPHA, 2 * shards - 2), f"chi-square {statistic:.1f} rejects at 1%"


def test_the_chi_square_test_can_reject(names):
    # The same counts against a wrong model (all 37 values equally likely) must be rejected,
    # or the test above proves nothing.
    column = shard_column("ShardId", ["FirstName", ShardSource("LastName", not_null=True)], 19)
    counts = Counter(column.shard_of({"FirstName": f, "LastName": last}) for f, last in names)
    uniform = {v: 1 / 37 for v in column.values}
    assert chi2_statistic(counts, uniform) > chi2_critical(ALPHA, 36)


def test_python_shard_matches_the_documented_fingerprints():
    # Spanner's documented values: FARM_FINGERPRINT('abc') = 2640714258260161385, '' = -7286425919675154353.
    column = ShardColumn("S", (ShardSource("Name"),), 19)
    assert column.shard_of({"Name": "abc"}) == 2640714258260161385 % 19
    assert column.shard_of({"Name": None}) == -(7286425919675154353 % 19)   # MOD keeps the sign
    assert fingerprint("1footrue") == -1541654101129638711


def test_the_server_computes_the_same_distribution(spanner_client, make_database, names):
    """One query evaluates the generated expression over all 100,000 (last) names in the server."""
    column = shard_column("ShardId", ["Name"], 19)
    database = make_database([])
    sql = f"SELECT {column.expression} AS shard, COUNT(*) FROM UNNEST(@names) AS `Name` GROUP BY shard"
    values = [last for _, last in names]
    with database.snapshot() as snap:
        rows = list(snap.execute_sql(sql, params={"names": values}, param_types={"names": param_types.Array(param_types.STRING)}))
    server = Counter({shard: count for shard, count in rows})
    assert server == Counter(column.shard_of({"Name": v}) for v in values)
    assert sorted(server) == list(column.values)
    assert chi2_statistic(server, expected_probabilities(19)) < chi2_critical(ALPHA, 36)
