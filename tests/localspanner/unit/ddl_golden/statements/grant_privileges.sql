grant select ( Name,SingerId ), insert, delete on table Singers, Albums to role analyst, lead
