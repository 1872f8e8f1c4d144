alter table Orders add constraint QtyOk check(Quantity >= 0)
