"""JSON values have neither equality nor order in GoogleSQL: comparing them is INVALID_ARGUMENT, as on Spanner.

(A FixedShardProvider over a JSON column, which the Java library accepts, then fails its first poll
with that error instead of seeming to work.)
"""

from __future__ import annotations

import pytest
from google.api_core import exceptions as gexc
from google.cloud.spanner_v1 import JsonObject, param_types


@pytest.fixture(scope="module")
def db(instance):
    import uuid

    database = instance.database(f"jsoncmp-{uuid.uuid4().hex[:8]}",
                                 ddl_statements=["CREATE TABLE Docs (Id INT64 NOT NULL, Doc JSON) PRIMARY KEY (Id)"])
    database.create().result(60)
    with database.batch() as batch:
        batch.insert("Docs", ("Id", "Doc"), [(1, JsonObject({"a": 1})), (2, None)])
    yield database
    database.drop()


_DOC = {"j": JsonObject({"a": 1})}
_JSON = {"j": param_types.JSON}


@pytest.mark.parametrize("sql, params, types, word", [
    ("SELECT Id FROM Docs WHERE Doc = @j", _DOC, _JSON, "Equality"),
    ("SELECT Id FROM Docs WHERE Doc != @j", _DOC, _JSON, "Inequality"),
    ("SELECT Id FROM Docs WHERE Doc < @j", _DOC, _JSON, "Less than"),
    ("SELECT Id FROM Docs WHERE Doc IN (@j)", _DOC, _JSON, "Equality"),
    ("SELECT Id FROM Docs WHERE Doc IS NOT NULL AND Doc IN UNNEST(@j)", {"j": [JsonObject({"a": 1})]},
     {"j": param_types.Array(param_types.JSON)}, "Equality"),
], ids=["eq", "neq", "lt", "in", "in-unnest"])
def test_comparing_json_is_invalid(db, sql, params, types, word):
    with pytest.raises(gexc.InvalidArgument, match=f"{word} is not defined for arguments of type JSON"):
        with db.snapshot() as snap:
            list(snap.execute_sql(sql, params=params, param_types=types))


def test_json_fields_and_nulls_still_compare(db):
    with db.snapshot(multi_use=True) as snap:
        assert list(snap.execute_sql("SELECT Id FROM Docs WHERE JSON_VALUE(Doc, '$.a') = '1'")) == [[1]]
        assert list(snap.execute_sql("SELECT Id FROM Docs WHERE Doc IS NULL")) == [[2]]
