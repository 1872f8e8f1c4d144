"""Values checked as Spanner checks them: NUMERIC precision and scale, key columns, INT64 text.

The official client already refuses a ``Decimal`` beyond scale 9 or 29 integer digits before
sending it, so these tests send NUMERIC values as text, which the client passes through as
written (the way other clients and JSON-fed applications send them).
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_v1 import param_types

DDL = [
    "CREATE TABLE Prices (Id INT64 NOT NULL, Amount NUMERIC, Qty INT64) PRIMARY KEY (Id)",
    "CREATE TABLE Pairs (A INT64 NOT NULL, B INT64 NOT NULL, V STRING(MAX)) PRIMARY KEY (A, B)",
]
MAX_NUMERIC = "99999999999999999999999999999.999999999"


@pytest.fixture
def db(make_database):
    return make_database(DDL)


def _insert(db, table, columns, rows):
    with db.batch() as b:
        b.insert_or_update(table, columns, rows)


def _amounts(db):
    with db.snapshot() as snap:
        return {r[0]: r[1] for r in snap.execute_sql("SELECT Id, Amount FROM Prices")}


def test_numeric_at_the_limits_is_kept_exactly(db):
    _insert(db, "Prices", ("Id", "Amount"), [(1, MAX_NUMERIC), (2, "-" + MAX_NUMERIC), (3, "0.000000001"),
                                             (4, "1.500000000000")])
    amounts = _amounts(db)
    assert amounts[1] == Decimal(MAX_NUMERIC) and amounts[2] == Decimal("-" + MAX_NUMERIC)
    assert amounts[3] == Decimal("0.000000001") and amounts[4] == Decimal("1.5")


@pytest.mark.parametrize("text", ["0.1234567891", "1e-10", "100000000000000000000000000000", "1" * 30 + ".5"])
def test_numeric_beyond_precision_or_scale_is_refused_in_a_mutation(db, text):
    with pytest.raises(exceptions.InvalidArgument) as info:
        _insert(db, "Prices", ("Id", "Amount"), [(10, text)])
    message = str(info.value)
    assert "Amount" in message and "Prices" in message and "NUMERIC" in message
    assert 10 not in _amounts(db)  # not silently rounded into the table


def test_numeric_beyond_scale_is_refused_as_a_dml_parameter(db):
    def update(txn):
        return txn.execute_update("UPDATE Prices SET Amount = @a WHERE Id = 1",
                                  params={"a": "1.0000000001"}, param_types={"a": param_types.NUMERIC})

    with pytest.raises(exceptions.InvalidArgument, match="NUMERIC"):
        db.run_in_transaction(update)


def test_numeric_beyond_scale_is_refused_as_a_dml_literal(db):
    with pytest.raises(exceptions.InvalidArgument) as info:
        db.run_in_transaction(lambda txn: txn.execute_update(
            "INSERT INTO Prices (Id, Amount) VALUES (11, '1.0000000001')"))
    assert "Amount" in str(info.value) and "Prices" in str(info.value) and "NUMERIC" in str(info.value)
    with pytest.raises(exceptions.InvalidArgument, match="NUMERIC"):
        db.run_in_transaction(lambda txn: txn.execute_update("UPDATE Prices SET Amount = '0.1234567891' WHERE Id = 11"))
    db.run_in_transaction(lambda txn: txn.execute_update(
        "INSERT INTO Prices (Id, Amount) VALUES (11, '1.000000001')"))
    assert _amounts(db)[11] == Decimal("1.000000001")


def test_a_mutation_missing_a_key_column_is_invalid_argument(db):
    with pytest.raises(exceptions.InvalidArgument) as info:
        _insert(db, "Pairs", ("A", "V"), [(1, "x")])
    assert "B" in str(info.value) and "Pairs" in str(info.value)


def test_an_empty_string_for_int64_is_refused_naming_column_table_and_type(db):
    # The client turns a Python int into its decimal text; it sends '' only when the
    # application passes '' itself. Spanner refuses a mutation value that is not of its
    # column's type with FAILED_PRECONDITION (the official client's own system test
    # test_invalid_type expects exactly that), naming column, table and type.
    with pytest.raises(exceptions.FailedPrecondition) as info:
        _insert(db, "Prices", ("Id", "Qty"), [(20, "")])
    message = str(info.value)
    assert "Qty" in message and "Prices" in message and "INT64" in message
    with pytest.raises(exceptions.FailedPrecondition, match="INT64"):
        _insert(db, "Prices", ("Id",), [("",)])
    with db.snapshot() as snap:
        assert list(snap.read("Prices", ("Id",), spanner.KeySet(keys=[[20]]))) == []


def test_int64_as_decimal_text_is_accepted(db):
    _insert(db, "Prices", ("Id", "Qty"), [("21", str(2**63 - 1))])
    with db.snapshot() as snap:
        assert list(snap.read("Prices", ("Id", "Qty"), spanner.KeySet(keys=[[21]]))) == [[21, 2**63 - 1]]
