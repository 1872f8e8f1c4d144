drop view `Order`
