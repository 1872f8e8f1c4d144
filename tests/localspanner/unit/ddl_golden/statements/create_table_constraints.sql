create table Orders (
  OrderId int64 not null,
  CustomerId int64,
  Quantity int64,
  constraint QuantityPositive check (Quantity > 0),
  check (Quantity < 1000),
  constraint FK_OrderCustomer foreign key (CustomerId) references Customers (CustomerId) on delete cascade,
  foreign key (OrderId) references Archive (Id) not enforced
) primary key (OrderId)
