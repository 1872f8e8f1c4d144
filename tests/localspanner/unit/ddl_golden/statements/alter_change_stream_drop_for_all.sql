Alter Change Stream S Drop For All
