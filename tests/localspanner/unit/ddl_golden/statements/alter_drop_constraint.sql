alter table Orders drop constraint QtyOk
