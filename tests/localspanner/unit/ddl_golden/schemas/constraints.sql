CREATE TABLE Customers (
  CustomerId INT64 NOT NULL,
  Login STRING(50),
  Age INT64,
  CONSTRAINT AgeOk CHECK (Age >= 0),
) PRIMARY KEY (CustomerId);
CREATE TABLE Orders (
  OrderId INT64 NOT NULL,
  CustomerId INT64,
  Author STRING(50),
  CHECK (OrderId > 0),
  CONSTRAINT FK_Customer FOREIGN KEY (CustomerId) REFERENCES Customers (CustomerId) ON DELETE CASCADE,
  FOREIGN KEY (Author) REFERENCES Customers (Login),
) PRIMARY KEY (OrderId);
CREATE TABLE Later (Id INT64 NOT NULL) PRIMARY KEY (Id);
-- a foreign key to a table created after its own table prints after all tables
ALTER TABLE Customers ADD CONSTRAINT FK_Later FOREIGN KEY (CustomerId) REFERENCES Later (Id) NOT ENFORCED;
ALTER TABLE Customers DROP CONSTRAINT AgeOk;
ALTER TABLE Customers ADD CONSTRAINT AgeOk2 CHECK (Age < 200);
